import type { FastifyRequest } from 'fastify';
import { rateLimitedError, rateLimitHeaders } from '../../../libs/rate-limit/index.js';
import type { ApiInstance } from '../types.js';

/**
 * Authenticates each request (before its body is read) and counts it against the organization's
 * hourly bucket. Every authenticated request counts whatever its outcome, except one answered
 * 429; the rate-limit headers go on every authenticated response, errors included.
 */
export function registerAuthentication(app: ApiInstance): void {
  const { authenticator, rateLimiter } = app.deps.platform;
  app.decorateRequest('auth', undefined);
  app.decorateRequest('rateLimit', undefined);

  app.addHook('onRequest', async (request: FastifyRequest, reply) => {
    if (request.is404) return;
    const mode = request.routeOptions.config.auth ?? 'required';
    if (mode === 'none') return;
    const header = request.headers.authorization;
    if (mode === 'optional' && header === undefined) return;
    request.auth = await authenticator.authenticate(header);
    const decision = await rateLimiter.consume(request.auth);
    request.rateLimit = decision;
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) throw rateLimitedError(decision);
  });
}
