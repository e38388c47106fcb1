import type { Redis } from 'ioredis';
import { Batcher } from '../batching/index.js';
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

/**
 * Many requests' RATE_LIMIT_LUA in one script call: KEYS one bucket per request, ARGV per request
 * its limit and ttl -> per request count, allowed. Requests run in order, so two requests of one
 * bucket in the same call see each other's count exactly as two separate calls would.
 */
const RATE_LIMIT_MANY_LUA = `
local function consume_request(KEYS, ARGV)
${RATE_LIMIT_LUA}
end
local out = {}
for i = 1, #KEYS do
  local decision = consume_request({ KEYS[i] }, { ARGV[2 * i - 1], ARGV[2 * i] })
  out[#out + 1] = decision[1]
  out[#out + 1] = decision[2]
end
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
