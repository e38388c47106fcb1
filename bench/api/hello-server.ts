/**
 * The benchmark's baseline: a bare Fastify app with one JSON route, in a process of its own, on
 * 127.0.0.1 (PORT, 0 for any free port). Prints `{"port":N}` once listening.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/hello', async () => ({ hello: 'world' }));
const address = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.stdout.write(`${JSON.stringify({ port: Number(new URL(address).port) })}\n`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => app.close());
