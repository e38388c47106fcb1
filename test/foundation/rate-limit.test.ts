import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DependencyGuard } from '../../libs/dependency-guard/index.js';
import {
  MemoryRateLimitStore,
  RateLimiter,
  type RateLimitStore,
  RedisRateLimitStore,
  rateLimitHeaders,
} from '../../libs/rate-limit/index.js';
import { connectRedis, type Redis } from '../../libs/redis/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { testServices, uniqueName } from '../helpers/services.js';

const HOUR = 3_600_000;
// 10:59:30 UTC on some day: 30 s before the window ends
const T0 = Date.UTC(2026, 10, 22, 10, 59, 30);

/** A clock tests move by hand. */
function manualClock(start: number) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

const orgA = { orgId: 1, plan: 'beta' as const, rateLimitOverride: 3 };
const orgB = { orgId: 2, plan: 'beta' as const, rateLimitOverride: 3 };

/** The same contract for the Redis store (production) and the in-process store (embedded). */
function storeContract(name: string, makeStore: () => RateLimitStore) {
  describe(`rate limiter on the ${name} store`, () => {
    it('counts every request of an organization in one hourly bucket, and stops at the limit', async () => {
      const clock = manualClock(T0);
      const limiter = new RateLimiter(makeStore(), { keyPrefix: uniqueName('rl'), now: clock.now });
      const results = [];
      for (let i = 0; i < 4; i++) results.push(await limiter.consume(orgA));
      expect(results.map((r) => [r.allowed, r.remaining])).toEqual([
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ]);
      expect(results[3]!.secondsToReset).toBe(30);
      expect(results[3]!.resetEpochSeconds).toBe(Date.UTC(2026, 10, 22, 11) / 1000);
    });

    it('keeps organizations apart', async () => {
      const limiter = new RateLimiter(makeStore(), { keyPrefix: uniqueName('rl'), now: () => T0 });
      for (let i = 0; i < 3; i++) await limiter.consume(orgA);
      expect((await limiter.consume(orgA)).allowed).toBe(false);
      expect(await limiter.consume(orgB)).toMatchObject({ allowed: true, remaining: 2 });
    });

    it('resets at the top of the UTC hour, not an hour after the first request', async () => {
      const clock = manualClock(T0);
      const limiter = new RateLimiter(makeStore(), { keyPrefix: uniqueName('rl'), now: clock.now });
      for (let i = 0; i < 3; i++) await limiter.consume(orgA);
      expect((await limiter.consume(orgA)).allowed).toBe(false);
      clock.advance(29_000); // 10:59:59
      const stillBlocked = await limiter.consume(orgA);
      expect(stillBlocked).toMatchObject({ allowed: false, secondsToReset: 1 });
      clock.advance(1_000); // 11:00:00
      expect(await limiter.consume(orgA)).toMatchObject({
        allowed: true,
        remaining: 2,
        secondsToReset: 3600,
      });
    });

    it('counts concurrent requests one by one (the Redis store sends them in one script call)', async () => {
      const limiter = new RateLimiter(makeStore(), { keyPrefix: uniqueName('rl'), now: () => T0 });
      const other = { ...orgB, rateLimitOverride: 10 };
      const outcomes = await Promise.all(
        Array.from({ length: 12 }, (_, i) => limiter.consume(i % 2 === 0 ? orgA : other)),
      );
      const ofA = outcomes.filter((_, i) => i % 2 === 0);
      const ofB = outcomes.filter((_, i) => i % 2 === 1);
      expect(ofA.map((o) => [o.allowed, o.remaining])).toEqual([
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
        [false, 0],
        [false, 0],
      ]);
      expect(ofB.map((o) => o.remaining)).toEqual([9, 8, 7, 6, 5, 4]);
    });

    it('does not count a rejected request: a raised limit frees exactly the difference', async () => {
      const limiter = new RateLimiter(makeStore(), { keyPrefix: uniqueName('rl'), now: () => T0 });
      for (let i = 0; i < 10; i++) await limiter.consume(orgA);
      const raised = { ...orgA, rateLimitOverride: 5 };
      expect(await limiter.consume(raised)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await limiter.consume(raised)).toMatchObject({ allowed: true, remaining: 0 });
      expect((await limiter.consume(raised)).allowed).toBe(false);
    });

    it('reports the count it found, not the limit, when a lowered limit refuses', async () => {
      const store = makeStore();
      const bucket = uniqueName('rl-lowered');
      for (let i = 1; i <= 5; i++)
        expect(await store.consume(bucket, 5, 60)).toEqual({ count: i, allowed: true });
      expect(await store.consume(bucket, 2, 60)).toEqual({ count: 5, allowed: false });
      expect(await store.consume(bucket, 6, 60)).toEqual({ count: 6, allowed: true });
    });

    it('uses the plan limit when there is no override', async () => {
      const limiter = new RateLimiter(makeStore(), { keyPrefix: uniqueName('rl'), now: () => T0 });
      expect(await limiter.consume({ orgId: 9, plan: 'growth', rateLimitOverride: null })).toMatchObject({
        limit: 50_000,
        remaining: 49_999,
      });
    });
  });
}

let redis: Redis;
let other: Redis;
beforeAll(async () => {
  redis = await connectRedis(testServices().redisUrl, 2000);
  other = await connectRedis(testServices().redisUrl, 2000);
});
afterAll(() => {
  redis.disconnect();
  other.disconnect();
});

storeContract('Redis', () => new RedisRateLimitStore(redis));
storeContract('in-process', () => new MemoryRateLimitStore(() => T0));

describe('rate limiter across replicas', () => {
  it('two processes (two Redis connections, two limiters) share one bucket', async () => {
    const prefix = uniqueName('rl');
    const replica1 = new RateLimiter(new RedisRateLimitStore(redis), { keyPrefix: prefix, now: () => T0 });
    const replica2 = new RateLimiter(new RedisRateLimitStore(other), { keyPrefix: prefix, now: () => T0 });
    const outcomes = await Promise.all([
      replica1.consume(orgA),
      replica2.consume(orgA),
      replica1.consume(orgA),
      replica2.consume(orgA),
      replica1.consume(orgA),
    ]);
    expect(outcomes.filter((o) => o.allowed)).toHaveLength(3);
    // the bucket expires a little after its hour (set once, when the script created it)
    const [bucket] = await redis.keys(`${prefix}*`);
    expect(await redis.get(bucket!)).toBe('3');
    const ttl = await redis.ttl(bucket!);
    expect(ttl).toBeGreaterThan(3600);
    expect(ttl).toBeLessThanOrEqual(3600 + 300);
  });

  it('sets the expiry of a bucket once, when it is made: later counts leave it as it is', async () => {
    const prefix = uniqueName('rl');
    const limiter = new RateLimiter(new RedisRateLimitStore(redis), { keyPrefix: prefix, now: () => T0 });
    await limiter.consume(orgA);
    const [bucket] = await redis.keys(`${prefix}*`);
    await redis.expire(bucket!, 100);
    expect(await limiter.consume(orgA)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await redis.get(bucket!)).toBe('2');
    expect(await redis.ttl(bucket!)).toBeLessThanOrEqual(100);
  });

  it("sends each turn's counts through Redis' outage guard, in one call", async () => {
    let runs = 0;
    const guard = {
      run: <T>(call: () => Promise<T>) => {
        runs++;
        return call();
      },
    } as unknown as DependencyGuard;
    const limiter = new RateLimiter(new RedisRateLimitStore(redis, guard), {
      keyPrefix: uniqueName('rl'),
      now: () => T0,
    });
    const outcomes = await Promise.all([limiter.consume(orgA), limiter.consume(orgB), limiter.consume(orgA)]);
    expect(outcomes.map((o) => o.remaining)).toEqual([2, 2, 1]);
    expect(runs).toBe(1);
  });

  it('the headers follow the contract (docs/architecture.md)', () => {
    const headers = rateLimitHeaders({
      allowed: true,
      plan: 'beta',
      limit: 2000,
      remaining: 1500,
      resetEpochSeconds: 1_795_388_400,
      secondsToReset: 1200,
    });
    expect(headers).toEqual({
      'X-RateLimit-Limit': '2000',
      'X-RateLimit-Remaining': '1500',
      'X-RateLimit-Reset': '1795388400',
      'RateLimit-Policy': '"hourly";q=2000;w=3600',
      RateLimit: '"hourly";r=1500;t=1200',
    });
  });
});

describe('rate limits over HTTP', () => {
  let api: TestApi;
  const clock = manualClock(T0 - 10 * 60_000); // 10:49:30
  beforeAll(async () => {
    api = await startTestApi({ now: clock.now });
  });
  afterAll(() => api.close());

  it('two keys of one organization share its bucket; the request over the limit is a 429 with Retry-After', async () => {
    const org = await createTestOrg(api.platform.db, { requestsPerHour: 3 });
    const { createApiKey } = await import('../../libs/auth/index.js');
    const second = await createApiKey(api.platform.db, { orgId: org.orgId });
    const statuses = [];
    for (const key of [org.apiKey, second.api_key, org.apiKey]) {
      const response = await api.request({ method: 'GET', path: '/openapi.json', key });
      statuses.push(response.statusCode);
      expect(response.headers['x-ratelimit-limit']).toBe('3');
    }
    expect(statuses).toEqual([200, 200, 200]);

    const limited = await api.request({ method: 'GET', path: '/openapi.json', key: second.api_key });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBe(String(10 * 60 + 30)); // to 11:00:00 UTC
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    const body = limited.json();
    expect(body).toMatchObject({ error_code: 'RATE_LIMITED', request_id: limited.headers['x-request-id'] });
    expect(body.detail).toMatch(/organization/i);

    // another organization is not affected
    const otherOrg = await createTestOrg(api.platform.db, { requestsPerHour: 3 });
    const fine = await api.request({ method: 'GET', path: '/openapi.json', key: otherOrg.apiKey });
    expect(fine.statusCode).toBe(200);
    expect(fine.headers['x-ratelimit-remaining']).toBe('2');

    // the next window serves the first organization again
    clock.advance(HOUR);
    const next = await api.request({ method: 'GET', path: '/openapi.json', key: org.apiKey });
    expect(next.statusCode).toBe(200);
    expect(next.headers['x-ratelimit-remaining']).toBe('2');
  });

  it('every authenticated request counts whatever its status, 404 and 422 included', async () => {
    const org = await createTestOrg(api.platform.db, { requestsPerHour: 100 });
    const first = await api.request({ method: 'GET', path: '/openapi.json', key: org.apiKey });
    const remainingBefore = Number(first.headers['x-ratelimit-remaining']);
    const meta = await api.request({ method: 'GET', path: '/meta', key: org.apiKey });
    expect(meta.headers['x-ratelimit-remaining']).toBe(String(remainingBefore - 1));
    expect(meta.json().data.organization).toMatchObject({
      plan: 'scale',
      limit: 100,
      remaining: remainingBefore - 1,
    });
    // the same instant as X-RateLimit-Reset (epoch seconds): the top of the next UTC hour
    const resetsAt = meta.json().data.organization.resets_at as string;
    expect(resetsAt).toBe(new Date(Number(meta.headers['x-ratelimit-reset']) * 1000).toISOString());
    expect(resetsAt).toMatch(/T\d\d:00:00\.000Z$/);
  });
});
