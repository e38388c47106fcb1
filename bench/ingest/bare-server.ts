/**
 * The ceiling of the ingest benchmark: a bare uWebSockets.js route that reads the body and answers
 * 201 with a small JSON, nothing else, in a process of its own on 127.0.0.1 (PORT, 0 for any free
 * port). Prints `{"port":N}` once listening.
 */
import { createRequire } from 'node:module';
import type * as UWS from '@trufflesuite/uws-js-unofficial';

const uws: typeof UWS = createRequire(import.meta.url)('@trufflesuite/uws-js-unofficial');
const BODY = JSON.stringify({ data: { id: '00000000-0000-4000-8000-000000000000', object: 'usage_event' } });

uws
  .App()
  .post('/*', (res) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    res.onData((_chunk, isLast) => {
      if (!isLast || aborted) return;
      res.cork(() => {
        res.writeStatus('201 Created').writeHeader('content-type', 'application/json').end(BODY);
      });
    });
  })
  .listen('127.0.0.1', Number(process.env.PORT ?? 0), (socket) => {
    if (!socket) {
      process.stderr.write('cannot listen\n');
      process.exit(1);
    }
    process.stdout.write(`${JSON.stringify({ port: uws.us_socket_local_port(socket) })}\n`);
  });
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => process.exit(0));
