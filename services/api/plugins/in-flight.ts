import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../../libs/errors/index.js';
import { InFlightRequests } from '../../../libs/shutdown/index.js';
import type { ApiInstance } from '../types.js';

const finished = Symbol('request finished');
type Tracked = FastifyRequest & { [finished]?: boolean };

/**
 * Counts requests whose work is still running. Closing the server waits for requests whose client
 * is still connected, but a client that went away mid-request leaves its hooks and handler
 * running; closing the database or Redis under them would fail them, with errors in the log at
 * every shutdown under load. `app.requestsFinished()` resolves once none is left, so a caller closes
 * those only after it. A request's work ends when its reply is ready (onSend runs for every
 * outcome, a client gone included); onResponse is a second chance that cannot count twice.
 */
export function registerInFlightTracking(app: ApiInstance): void {
  const requests = new InFlightRequests();
  const finish = (request: Tracked) => {
    if (request[finished] !== false) return;
    request[finished] = true;
    requests.finish();
  };
  app.decorate('requestsFinished', () => requests.idle());
  // Once closing, a request that still arrives on an open connection is answered 503 like every
  // other error (Retry-After, X-Request-ID, the error body) instead of Fastify's bare 503.
  app.addHook('preClose', async () => requests.startDraining());
  // callback hooks, not async ones: they run on every request and never wait
  app.addHook('onRequest', (request: Tracked, reply, done) => {
    request[finished] = false;
    requests.begin();
    if (!requests.draining) return done();
    reply.header('connection', 'close');
    done(ApiError.shuttingDown());
  });
  app.addHook('onSend', (request: Tracked, _reply, payload, done) => {
    finish(request);
    done(null, payload);
  });
  app.addHook('onResponse', (request: Tracked, _reply, done) => {
    finish(request);
    done();
  });
}
