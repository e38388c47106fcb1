import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../../libs/errors/index.js';
import type { ApiInstance } from '../types.js';

const settled = Symbol('request settled');
type Tracked = FastifyRequest & { [settled]?: boolean };

/**
 * Counts requests whose work is still running. Closing the server waits for requests whose client
 * is still connected, but a client that went away mid-request leaves its hooks and handler
 * running; closing the database or Redis under them would fail them, with errors in the log at
 * every shutdown under load. `app.requestsSettled()` resolves once none is left, so a caller closes
 * those only after it. A request's work ends when its reply is ready (onSend runs for every
 * outcome, a client gone included); onResponse is a second chance that cannot count twice.
 */
export function registerInFlightTracking(app: ApiInstance): void {
  let running = 0;
  const waiters: (() => void)[] = [];
  const settle = (request: Tracked) => {
    if (request[settled] !== false) return;
    request[settled] = true;
    running--;
    if (running === 0) for (const wake of waiters.splice(0)) wake();
  };
  app.decorate('requestsSettled', () =>
    running === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve)),
  );
  // Once closing, a request that still arrives on an open connection is answered 503 like every
  // other error (Retry-After, X-Request-ID, the error body) instead of Fastify's bare 503.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (request: Tracked, reply) => {
    request[settled] = false;
    running++;
    if (closing) {
      reply.header('connection', 'close');
      throw ApiError.shuttingDown();
    }
  });
  app.addHook('onSend', async (request: Tracked) => settle(request));
  app.addHook('onResponse', async (request: Tracked) => settle(request));
}
