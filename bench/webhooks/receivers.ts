/**
 * The webhook receivers of the benchmark, in a process of their own: BENCH_RECEIVERS HTTP
 * servers on 127.0.0.1 that answer 200 at once and note when each delivery arrived.
 *
 * Protocol (one line each way): prints `{"ports":[...]}` once listening; on stdin, `reset`
 * forgets what arrived (answers `ok`), `report` prints every first arrival as
 * `{"arrivals":[[delivery_id, sent_at_ms, arrived_at_ms], ...], "requests": n}`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';

const count = Number(process.env.BENCH_RECEIVERS ?? 2);
/** First arrival of each delivery id: redeliveries (at-least-once) count as requests, not deliveries. */
let arrivals = new Map<string, [number, number]>();
let requests = 0;

const ports: number[] = [];
for (let index = 0; index < count; index++) {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const arrivedAt = Date.now();
      requests++;
      const delivery = request.headers['x-service-delivery'];
      if (typeof delivery === 'string' && !arrivals.has(delivery)) {
        const sentAt = JSON.parse(Buffer.concat(chunks).toString('utf8')).data?.committing_at_ms;
        arrivals.set(delivery, [typeof sentAt === 'number' ? sentAt : Number.NaN, arrivedAt]);
      }
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end('ok');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ports.push((server.address() as AddressInfo).port);
}
process.stdout.write(`${JSON.stringify({ ports })}\n`);

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'reset') {
    arrivals = new Map();
    requests = 0;
    process.stdout.write('ok\n');
  } else if (line === 'report') {
    const rows = [...arrivals].map(([id, [sentAt, arrivedAt]]) => [id, sentAt, arrivedAt]);
    process.stdout.write(`${JSON.stringify({ arrivals: rows, requests })}\n`);
  }
});
process.stdin.on('end', () => process.exit(0));
