import type { FastifyRequest } from 'fastify';
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
  app.addHook('onRequest', async (request: Tracked) => {
    request[settled] = false;
    running++;
  });
  app.addHook('onSend', async (request: Tracked) => settle(request));
  app.addHook('onResponse', async (request: Tracked) => settle(request));
}
