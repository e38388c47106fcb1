import type { Redis } from 'ioredis';
import { Batcher } from '../batching/index.js';
import type { RateLimitStore } from './store.js';

/**
 * The rate-limit rule for the requests of ONE script call, as Lua functions that the scripts
 * include: `consume_request(bucket, limit, ttl)` -> {count, allowed} checks before it counts (a
 * request over the limit does not count) and keeps each bucket's count in the script, reading it
 * once; `save_buckets()` then writes each bucket once (INCRBY, and EXPIRE when it was new).
 * Requests run in order, so two requests of one bucket see each other's count exactly as two
 * separate calls would, with 2 Redis commands per bucket instead of 2 per request. Exported so
 * the ingest path runs it in the same script as its dedup step.
 */
export const RATE_LIMIT_LUA = `
local buckets = {}
local function consume_request(key, limit, ttl)
  local bucket = buckets[key]
  if not bucket then
    bucket = { count = tonumber(redis.call('GET', key) or '0'), added = 0, ttl = ttl }
    buckets[key] = bucket
  end
  if bucket.count >= tonumber(limit) then return {bucket.count, 0} end
  bucket.count = bucket.count + 1
  bucket.added = bucket.added + 1
  return {bucket.count, 1}
end
local function save_buckets()
  for key, bucket in pairs(buckets) do
    if bucket.added > 0 and redis.call('INCRBY', key, bucket.added) == bucket.added then
      redis.call('EXPIRE', key, bucket.ttl)
    end
  end
end
`;

/**
 * Many requests' consumptions in one script call: KEYS one bucket per request, ARGV per request
 * its limit and ttl -> per request count, allowed.
 */
const RATE_LIMIT_MANY_LUA = `
${RATE_LIMIT_LUA}
local out = {}
for i = 1, #KEYS do
  local decision = consume_request(KEYS[i], ARGV[2 * i - 1], ARGV[2 * i])
  out[#out + 1] = decision[1]
  out[#out + 1] = decision[2]
end
save_buckets()
return out
`;

type WithRateLimit = Redis & {
  billingRateLimitMany(numberOfKeys: number, ...args: (string | number)[]): Promise<number[]>;
};

interface Consumption {
  bucket: string;
  limit: number;
  ttlSeconds: number;
}

/**
 * Every request counted in one turn of the event loop goes to Redis in ONE script call: under
 * load, a Redis round trip (and the system calls and context switches it costs on both sides) is
 * shared by all the requests that arrived together, instead of one each.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly redis: WithRateLimit;
  private readonly consumptions: Batcher<Consumption, { count: number; allowed: boolean }>;

  constructor(redis: Redis) {
    if (!('billingRateLimitMany' in redis))
      redis.defineCommand('billingRateLimitMany', { lua: RATE_LIMIT_MANY_LUA });
    this.redis = redis as WithRateLimit;
    this.consumptions = new Batcher((batch) => this.consumeMany(batch), { lingerMs: 0, maxWeight: 1000 });
  }

  consume(bucket: string, limit: number, ttlSeconds: number): Promise<{ count: number; allowed: boolean }> {
    return this.consumptions.submit({ bucket, limit, ttlSeconds });
  }

  private async consumeMany(batch: Consumption[]): Promise<{ count: number; allowed: boolean }[]> {
    const args: (string | number)[] = batch.map((c) => c.bucket);
    for (const consumption of batch) args.push(consumption.limit, consumption.ttlSeconds);
    const out = await this.redis.billingRateLimitMany(batch.length, ...args);
    return batch.map((_, i) => ({ count: out[2 * i]!, allowed: out[2 * i + 1] === 1 }));
  }
}
