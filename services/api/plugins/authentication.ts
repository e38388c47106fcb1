import type { FastifyRequest } from 'fastify';
import type { AuthContext } from '../../../libs/auth/index.js';
import { ApiError } from '../../../libs/errors/index.js';
import {
  type RateLimitDecision,
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
    const decision = await consume(request.auth);
    request.rateLimit = decision;
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) throw rateLimitedError(decision);
  });
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
