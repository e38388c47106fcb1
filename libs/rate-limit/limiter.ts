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
 * A request's count, planned: the bucket to count it in and what a decision needs. The limiter
 * counts it itself (`consume`), or a store that counts inside a call of its own (ingest's
 * reservation script) does, and `decide` turns the count into the decision.
 */
export interface PlannedCount {
  orgId: number;
  plan: Plan;
  /** The bucket, as a store counts in it. */
  bucket: { key: string; limit: number; ttlSeconds: number };
  window: ReturnType<typeof hourWindow>;
}

/**
 * Per-organization fixed window on the UTC hour: the one place that decides whether a request is
 * within its organization's limit. An organization found over its limit is rejected from memory
 * until the window ends, without a store call: a client hammering after a 429 costs nothing. The
 * clock is injectable so tests can cross an hour boundary.
 */
export class RateLimiter {
  private readonly exhausted = new Map<number, { hour: number; limit: number }>();

  constructor(
    private readonly store: RateLimitStore,
    private readonly options: { keyPrefix?: string; now?: () => number } = {},
  ) {}

  async consume(subject: RateLimitSubject): Promise<RateLimitDecision> {
    const planned = this.plan(subject);
    const refused = this.refusedFromMemory(planned);
    if (refused) return refused;
    const { key, limit, ttlSeconds } = planned.bucket;
    return this.decide(planned, await this.store.consume(key, limit, ttlSeconds));
  }

  /** The bucket `subject`'s request counts in now, for a store that counts it elsewhere. */
  plan(subject: RateLimitSubject): PlannedCount {
    const window = hourWindow((this.options.now ?? Date.now)());
    return {
      orgId: subject.orgId,
      plan: subject.plan,
      bucket: {
        key: bucketKey(this.options.keyPrefix ?? '', subject.orgId, window.hour),
        limit: requestsPerHour(subject.plan, subject.rateLimitOverride),
        ttlSeconds: BUCKET_TTL_SECONDS,
      },
      window,
    };
  }

  /**
   * The refusal of a planned count whose organization this process already found over its limit in
   * the same window (no store call needed), or undefined: the count must go to the store.
   */
  refusedFromMemory(planned: PlannedCount): RateLimitDecision | undefined {
    const known = this.exhausted.get(planned.orgId);
    if (known && known.hour === planned.window.hour && known.limit === planned.bucket.limit) {
      return decisionOf(planned, { count: planned.bucket.limit, allowed: false });
    }
    return undefined;
  }

  /** The decision for a planned count the store made (`count` requests so far, this one included). */
  decide(planned: PlannedCount, counted: { count: number; allowed: boolean }): RateLimitDecision {
    if (!counted.allowed) {
      this.exhausted.set(planned.orgId, { hour: planned.window.hour, limit: planned.bucket.limit });
    } else if (this.exhausted.has(planned.orgId)) {
      this.exhausted.delete(planned.orgId);
    }
    return decisionOf(planned, counted);
  }
}

function decisionOf(
  planned: PlannedCount,
  { count, allowed }: { count: number; allowed: boolean },
): RateLimitDecision {
  const { limit } = planned.bucket;
  return {
    allowed,
    plan: planned.plan,
    limit,
    remaining: Math.max(0, limit - count),
    resetEpochSeconds: planned.window.resetEpochSeconds,
    secondsToReset: planned.window.secondsToReset,
  };
}
