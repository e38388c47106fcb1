import { createRequire } from 'node:module';
import type * as UWS from '@trufflesuite/uws-js-unofficial';
import type { TemplatedApp, us_listen_socket } from '@trufflesuite/uws-js-unofficial';

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

/**
 * Listens with LIBUS_LISTEN_EXCLUSIVE_PORT. uWS otherwise sets SO_REUSEPORT: a second process on the
 * same port would start without error and silently take part of the connections (a stale process
 * left running by a deploy, a copy started by mistake). The typings lack the host + options form
 * that the native module (and the fallback) accept.
 */
export function listenExclusive(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  const listen = app.listen as unknown as (
    host: string,
    port: number,
    options: number,
    cb: (socket: us_listen_socket | false) => void,
  ) => TemplatedApp;
  return new Promise((resolve, reject) => {
    listen.call(app, host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, (socket) => {
      if (socket) resolve(socket);
      else reject(new Error(`the ingest service cannot listen on ${host}:${port} (in use?)`));
    });
  });
}

const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;
