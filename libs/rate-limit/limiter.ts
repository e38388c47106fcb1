import { type Plan, requestsPerHour } from './plans.js';
import type { RateLimitStore } from './store.js';
import { BUCKET_TTL_SECONDS, bucketKey, hourWindow } from './window.js';

export interface RateLimitSubject {
  orgId: number;
  plan: Plan;
  rateLimitOverride: number | null;
}

export interface RateLimitDecision {
  allowed: boolean;
  plan: Plan;
  limit: number;
  remaining: number;
  /** Epoch second of the next top of the UTC hour. */
  resetEpochSeconds: number;
  /** Seconds until then (the Retry-After of a 429). */
  secondsToReset: number;
}

/**
 * Per-organization fixed window on the UTC hour. An organization found over its limit is
 * rejected from memory until the window ends, without a store call: a client hammering after a
 * 429 costs nothing. The clock is injectable so tests can cross an hour boundary.
 */
export class RateLimiter {
  private readonly exhausted = new Map<number, { hour: number; limit: number }>();

  constructor(
    private readonly store: RateLimitStore,
    private readonly options: { keyPrefix?: string; now?: () => number } = {},
  ) {}

  async consume(subject: RateLimitSubject): Promise<RateLimitDecision> {
    const now = (this.options.now ?? Date.now)();
    const window = hourWindow(now);
    const limit = requestsPerHour(subject.plan, subject.rateLimitOverride);
    const decision = (count: number, allowed: boolean): RateLimitDecision => ({
      allowed,
      plan: subject.plan,
      limit,
      remaining: Math.max(0, limit - count),
      resetEpochSeconds: window.resetEpochSeconds,
      secondsToReset: window.secondsToReset,
    });

    const known = this.exhausted.get(subject.orgId);
    if (known && known.hour === window.hour && known.limit === limit) return decision(limit, false);

    const bucket = bucketKey(this.options.keyPrefix ?? '', subject.orgId, window.hour);
    const { count, allowed } = await this.store.consume(bucket, limit, BUCKET_TTL_SECONDS);
    if (!allowed) this.exhausted.set(subject.orgId, { hour: window.hour, limit });
    else if (known) this.exhausted.delete(subject.orgId);
    return decision(count, allowed);
  }

  /** Records a decision reached elsewhere (the ingest script counts inside its own Lua call). */
  noteExhausted(orgId: number, limit: number): void {
    this.exhausted.set(orgId, { hour: hourWindow((this.options.now ?? Date.now)()).hour, limit });
  }
}
