import { describe, expect, it } from 'vitest';
import { RateLimiter } from './limiter.js';
import { MemoryRateLimitStore } from './memory.js';
import type { RateLimitStore } from './store.js';

const AT = Date.UTC(2026, 0, 1, 5, 59, 30);
const subject = { orgId: 7, plan: 'beta' as const, rateLimitOverride: 2 };

/** The in-process store, with the calls it gets counted. */
function countingStore(now: () => number): RateLimitStore & { calls: number } {
  const memory = new MemoryRateLimitStore(now);
  const store = {
    calls: 0,
    consume(bucket: string, limit: number, ttlSeconds: number) {
      store.calls++;
      return memory.consume(bucket, limit, ttlSeconds);
    },
  };
  return store;
}

describe('RateLimiter', () => {
  it('plans the count of a request: its hourly bucket, its limit and how long the bucket lives', () => {
    const limiter = new RateLimiter(
      countingStore(() => AT),
      { keyPrefix: 'p:', now: () => AT },
    );
    const planned = limiter.plan(subject);
    const hour = Math.floor(AT / 3_600_000);
    expect(planned.bucket).toEqual({ key: `p:rl:7:${hour}`, limit: 2, ttlSeconds: 3900 });
    expect(planned.window).toEqual({ hour, resetEpochSeconds: (hour + 1) * 3600, secondsToReset: 30 });
    expect(limiter.plan({ ...subject, rateLimitOverride: null }).bucket.limit).toBe(2000);
  });

  it('decides a count made elsewhere as it decides its own, and remembers an exhausted organization', async () => {
    const store = countingStore(() => AT);
    const limiter = new RateLimiter(store, { now: () => AT });
    const planned = limiter.plan(subject);
    expect(limiter.decide(planned, { count: 1, allowed: true })).toMatchObject({
      allowed: true,
      limit: 2,
      remaining: 1,
      secondsToReset: 30,
    });
    // a store that counted elsewhere found the organization over its limit: no store call after
    expect(limiter.decide(planned, { count: 2, allowed: false })).toMatchObject({
      allowed: false,
      remaining: 0,
    });
    expect(await limiter.consume(subject)).toMatchObject({ allowed: false, remaining: 0 });
    expect(store.calls).toBe(0);
  });

  it('forgets a refusal once the store allows the organization again within the hour (a lost bucket)', async () => {
    const store = countingStore(() => AT);
    const limiter = new RateLimiter(store, { now: () => AT });
    const planned = limiter.plan(subject);
    expect(limiter.decide(planned, { count: 2, allowed: false }).allowed).toBe(false);
    // the count made elsewhere (ingest's script) found the bucket fresh: a Redis failover lost it
    expect(limiter.decide(planned, { count: 1, allowed: true })).toMatchObject({
      allowed: true,
      remaining: 1,
    });
    // so the next request goes to the store, not to the memory of the refusal
    expect(await limiter.consume(subject)).toMatchObject({ allowed: true, remaining: 1 });
    expect(store.calls).toBe(1);
  });

  it('counts in its store until the limit, then refuses from memory until the hour ends', async () => {
    let now = AT;
    const store = countingStore(() => now);
    const limiter = new RateLimiter(store, { now: () => now });
    expect((await limiter.consume(subject)).remaining).toBe(1);
    expect((await limiter.consume(subject)).remaining).toBe(0);
    expect((await limiter.consume(subject)).allowed).toBe(false);
    expect((await limiter.consume(subject)).allowed).toBe(false);
    expect(store.calls).toBe(3);
    now += 31_000; // the next hour
    expect(await limiter.consume(subject)).toMatchObject({
      allowed: true,
      remaining: 1,
      secondsToReset: 3599,
    });
  });

  it('a limit lowered below what the hour already counted refuses with 0 remaining, never a negative', async () => {
    const store = countingStore(() => AT);
    const limiter = new RateLimiter(store, { now: () => AT });
    const generous = { ...subject, rateLimitOverride: 5 };
    for (let i = 0; i < 5; i++) expect((await limiter.consume(generous)).allowed).toBe(true);
    // the override is lowered to 2 within the hour: five requests counted already
    const lowered = await limiter.consume(subject);
    expect(lowered).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
    // and raised again: the store decides anew, not the memory of the lower limit
    expect(await limiter.consume({ ...subject, rateLimitOverride: 6 })).toMatchObject({
      allowed: true,
      remaining: 0,
    });
  });
});

describe('MemoryRateLimitStore', () => {
  it('starts a bucket anew at exactly the instant its ttl ends, not a millisecond before', async () => {
    let now = AT;
    const store = new MemoryRateLimitStore(() => now);
    expect(await store.consume('b', 1, 10)).toEqual({ count: 1, allowed: true });
    now = AT + 9_999;
    expect(await store.consume('b', 1, 10)).toEqual({ count: 1, allowed: false });
    now = AT + 10_000;
    expect(await store.consume('b', 1, 10)).toEqual({ count: 1, allowed: true });
  });

  it('keeps the counts of buckets still alive when a new bucket sweeps the expired ones', async () => {
    let now = AT;
    const store = new MemoryRateLimitStore(() => now);
    expect(await store.consume('short', 5, 1)).toEqual({ count: 1, allowed: true });
    expect(await store.consume('long', 1, 60)).toEqual({ count: 1, allowed: true });
    now = AT + 5_000;
    // a new bucket: 'short' has expired and goes, 'long' still counts
    expect(await store.consume('new', 1, 60)).toEqual({ count: 1, allowed: true });
    expect(await store.consume('long', 1, 60)).toEqual({ count: 1, allowed: false });
    expect(await store.consume('short', 5, 1)).toEqual({ count: 1, allowed: true });
  });
});
