import { createRequire } from 'node:module';
import type * as UWS from '@trufflesuite/uws-js-unofficial';

export type {
  HttpRequest,
  HttpResponse,
  TemplatedApp,
  us_listen_socket,
} from '@trufflesuite/uws-js-unofficial';

/**
 * uWebSockets.js v20.30 (the @trufflesuite build on npm): native binaries for Node 18/20 on Linux
 * x64, loaded here for Node 20 (ABI 115). Where no binary fits, or with UWS_USE_FALLBACK=1, the
 * package falls back to a node:http shim that lacks several methods (onWritable, tryEnd, pause,
 * getRemoteAddress...), reports onAborted on every closed response, hands Buffers (not
 * ArrayBuffers) to onData and includes the query in getUrl. The server uses only what both offer.
 */
const require = createRequire(import.meta.url);
export const uws: typeof UWS = require('@trufflesuite/uws-js-unofficial');
