import type { Redis } from 'ioredis';
import type { RateLimitStore } from './store.js';

/**
 * KEYS[1] bucket, ARGV[1] limit, ARGV[2] ttl seconds -> {count, allowed}. Check and increment in
 * one atomic script: one round trip, and a request over the limit does not count.
 * Exported so the ingest path can run it in the same script as its dedup step.
 */
export const RATE_LIMIT_LUA = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count >= tonumber(ARGV[1]) then return {count, 0} end
count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return {count, 1}
`;

type WithRateLimit = Redis & {
  billingRateLimit(bucket: string, limit: number, ttlSeconds: number): Promise<[number, number]>;
};

export class RedisRateLimitStore implements RateLimitStore {
  private readonly redis: WithRateLimit;

  constructor(redis: Redis) {
    if (!('billingRateLimit' in redis))
      redis.defineCommand('billingRateLimit', { numberOfKeys: 1, lua: RATE_LIMIT_LUA });
    this.redis = redis as WithRateLimit;
  }

  async consume(
    bucket: string,
    limit: number,
    ttlSeconds: number,
  ): Promise<{ count: number; allowed: boolean }> {
    const [count, allowed] = await this.redis.billingRateLimit(bucket, limit, ttlSeconds);
    return { count, allowed: allowed === 1 };
  }
}
