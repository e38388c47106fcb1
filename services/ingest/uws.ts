import { createRequire } from 'node:module';
import type * as UWS from '@trufflesuite/uws-js-unofficial';
import type { TemplatedApp, us_listen_socket } from '@trufflesuite/uws-js-unofficial';
import type { HttpApp, HttpTransport } from './transport.js';

/**
 * uWebSockets.js v20.30 (the @trufflesuite build on npm): native binaries for Node 18/20 on Linux
 * x64. Where no binary fits, or with UWS_USE_FALLBACK=1, the package falls back to a node:http shim
 * that lacks several methods (onWritable, tryEnd, pause, getRemoteAddress...), reports onAborted on
 * every closed response, hands Buffers (not ArrayBuffers) to onData and includes the query in
 * getUrl. The server uses only what both offer.
 *
 * uWS' parser trims bytes from 0x80 up off both ends of a header value (it compares signed chars
 * with 33), and holds a request whose header has a control character or a name with a space
 * until its idle timeout. Neither can be seen from JS, so this transport serves only behind a proxy
 * that forwards exact, printable header values (INGEST_TRUSTED_PROXY; deploy/nginx is one).
 * Loaded on first use: a process on Node's own server never loads the native module.
 */
export function uwsTransport(uws: typeof UWS = loadUws()): HttpTransport {
  const app = uws.App();
  return {
    name: 'uws',
    app: app as unknown as HttpApp,
    async listen(host, port) {
      const socket = await listenExclusive(app, host, port);
      return {
        port: uws.us_socket_local_port(socket),
        stopAccepting: () => uws.us_listen_socket_close(socket),
      };
    },
  };
}

let loaded: typeof UWS | undefined;
export function loadUws(): typeof UWS {
  loaded ??= createRequire(import.meta.url)('@trufflesuite/uws-js-unofficial') as typeof UWS;
  return loaded;
}

/**
 * Whether the package loaded its native binary: where none fits this Node (ABI other than 18's or
 * 20's, another platform) it hands out its node:http shim instead, whose functions are JS.
 */
export function isNativeUws(uws: typeof UWS): boolean {
  return String(uws.App).includes('[native code]');
}

/**
 * Listens with LIBUS_LISTEN_EXCLUSIVE_PORT. uWS otherwise sets SO_REUSEPORT: a second process on the
 * same port would start without error and silently take part of the connections (a stale process
 * left running by a deploy, a copy started by mistake). The typings lack the host + options form
 * that the native module (and the fallback) accept.
 */
function listenExclusive(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
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
