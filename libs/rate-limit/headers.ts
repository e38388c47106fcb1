import { ApiError } from '../errors/index.js';
import { rateLimitRejections } from '../observability/index.js';
import type { RateLimitDecision } from './limiter.js';

/** The headers every authenticated response carries (docs/architecture.md, "Rules of the contract"), IETF draft headers included. */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(decision.limit),
    'X-RateLimit-Remaining': String(decision.remaining),
    'X-RateLimit-Reset': String(decision.resetEpochSeconds),
    'RateLimit-Policy': `"hourly";q=${decision.limit};w=3600`,
    RateLimit: `"hourly";r=${decision.remaining};t=${decision.secondsToReset}`,
  };
}

/** Every 429 of every service is built here, so it is counted here. */
export function rateLimitedError(decision: RateLimitDecision): ApiError {
  rateLimitRejections.inc({ plan: decision.plan });
  return new ApiError(
    'RATE_LIMITED',
    `The organization's limit of ${decision.limit} requests per hour (plan ${decision.plan}) is exhausted; ` +
      `it resets at the top of the UTC hour, in ${decision.secondsToReset} s.`,
    { headers: { 'Retry-After': String(decision.secondsToReset) } },
  );
}
