import type { FastifyRequest } from 'fastify';
import { rateLimitedError, rateLimitHeaders } from '../../../libs/rate-limit/index.js';
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
      request.auth = await authenticator.authenticate(header);
    }
    const decision = await rateLimiter.consume(request.auth);
    request.rateLimit = decision;
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) throw rateLimitedError(decision);
  });
}
