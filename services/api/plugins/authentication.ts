import type { FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import type { AuthContext } from '../../../libs/auth/index.js';
import { ApiError, toErrorBody } from '../../../libs/errors/index.js';
import {
  type PlannedCount,
  type RateLimitDecision,
  type RateLimiter,
  rateLimitedError,
  rateLimitHeaders,
} from '../../../libs/rate-limit/index.js';
import type { ApiInstance } from '../types.js';

/**
 * Authenticates each request (before its body is read) and counts it against the organization's
 * hourly bucket. Every authenticated request counts whatever its outcome, except one answered
 * 429; the rate-limit headers go on every authenticated response, errors included, and so on the
 * 404 of an unknown route asked with a valid key.
 */
export function registerAuthentication(app: ApiInstance): void {
  const { authenticator, rateLimiter } = app.deps.platform;
  app.decorateRequest('auth', undefined);
  app.decorateRequest('rateLimit', undefined);
  app.decorateRequest('rateLimitPlanned', undefined);

  const authenticate = (header: string | undefined): Promise<AuthContext> =>
    authenticator
      .authenticate(header)
      .catch(dependencyFailure('The database is unavailable; retry shortly.'));
  const consume = (auth: AuthContext): Promise<RateLimitDecision> =>
    rateLimiter.consume(auth).catch(dependencyFailure('The rate-limit store is unavailable; retry shortly.'));

  app.addHook('onRequest', async (request: FastifyRequest, reply) => {
    const mode = request.is404 ? 'if-valid' : (request.routeOptions.config.auth ?? 'required');
    if (mode === 'none') return;
    const header = request.headers.authorization;
    if ((mode === 'optional' || mode === 'if-valid') && header === undefined) return;
    if (mode === 'if-valid') {
      const auth = await authenticator.authenticate(header).catch(() => undefined);
      if (!auth) return;
      request.auth = auth;
    } else {
      request.auth = await authenticate(header);
    }
    if (request.routeOptions.config.countedBy === 'handler') {
      // counted by the handler in its own store call (countInHandler), unless already refused here
      const planned = rateLimiter.plan(request.auth);
      const refused = rateLimiter.refusedFromMemory(planned);
      if (!refused) {
        request.rateLimitPlanned = planned;
        return;
      }
      request.rateLimit = refused;
      reply.headers(rateLimitHeaders(refused));
      throw rateLimitedError(refused);
    }
    const decision = await consume(request.auth);
    request.rateLimit = decision;
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) throw rateLimitedError(decision);
  });

  // A route whose handler counts its request still counts one answered before the handler ran, or
  // by a handler that failed before its count (a 503 of a missing store): here, before the answer
  // leaves, and a refusal replaces the answer with the 429.
  // A callback hook: a request its handler counted (every check but a failed one) passes at once.
  const countUncounted: onSendHookHandler = (request, reply, payload, done) => {
    if (!request.rateLimitPlanned || request.rateLimit) return done(null, payload);
    request.rateLimitPlanned = undefined;
    consume(request.auth!).then(
      (decision) => {
        request.rateLimit = decision;
        reply.headers(rateLimitHeaders(decision));
        done(null, decision.allowed ? payload : replaceWithError(request, reply, rateLimitedError(decision)));
      },
      (error: unknown) => done(null, replaceWithError(request, reply, error as ApiError)),
    );
  };
  app.addHook('onRoute', (route) => {
    if (route.config?.countedBy !== 'handler') return;
    const own = route.onSend ? [route.onSend].flat() : [];
    route.onSend = [...own, countUncounted];
  });
}

/**
 * For a route with `countedBy: 'handler'`: the request's count, to make in the handler's own store
 * call (libs/entitlements' RequestCount). `decide` sets the rate-limit headers and throws the 429
 * of a refused request, as the hook does for every other route. Undefined when not to count (the
 * route is not counted by its handler, or the request was counted already).
 */
export function countInHandler(
  request: FastifyRequest,
  reply: FastifyReply,
):
  | { bucket: PlannedCount['bucket']; decide(counted: { count: number; allowed: boolean }): void }
  | undefined {
  const planned = request.rateLimitPlanned;
  if (!planned) return undefined;
  const limiter: RateLimiter = request.server.deps.platform.rateLimiter;
  return {
    bucket: planned.bucket,
    decide(counted) {
      if (request.rateLimit) return;
      request.rateLimitPlanned = undefined;
      const decision = limiter.decide(planned, counted);
      request.rateLimit = decision;
      reply.headers(rateLimitHeaders(decision));
      if (!decision.allowed) throw rateLimitedError(decision);
    },
  };
}

/** The answer about to leave, replaced by the error's (as the error handler would have sent it). */
function replaceWithError(request: FastifyRequest, reply: FastifyReply, error: ApiError): string {
  const { status, body } = toErrorBody(error, request.id);
  reply.code(status).headers(error.headers).type('application/json; charset=utf-8');
  return JSON.stringify(body);
}

/**
 * A key lookup needs Postgres on a cache miss and every request needs the rate-limit store: while
 * either is down that is a dependency failure (503 with Retry-After, docs/architecture.md, "Rules of the contract", as the ingest
 * service answers), not a bug (500). A refusal of the key itself stays what it is.
 */
function dependencyFailure(detail: string) {
  return (error: unknown): never => {
    if (error instanceof ApiError) throw error;
    throw ApiError.serviceUnavailable(detail, 1, error);
  };
}
