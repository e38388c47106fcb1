import type { Redis } from 'ioredis';
import { Batcher } from '../batching/index.js';
import type { DependencyGuard } from '../dependency-guard/index.js';
import { type Bucket, groupByBucket, nthDecision } from './bucket-groups.js';
import type { RateLimitStore } from './store.js';

/**
 * The rate-limit rule, as a Lua function the scripts include: `consume_requests(bucket, limit, ttl,
 * n)` -> count before, allowed counts `n` requests of one bucket at once, exactly as n requests
 * counted one by one, in order, would be: the first `limit - count` are allowed and counted, the
 * rest refused and not counted (groupByBucket gathers a batch's requests by bucket, nthDecision
 * gives each its own decision). Two Redis commands per bucket (GET, INCRBY; EXPIRE when it was new),
 * whatever the number of requests. Exported so the ingest path runs it in the same script as its
 * dedup step.
 */
export const RATE_LIMIT_LUA = `
local function consume_requests(key, limit, ttl, n)
  local count = tonumber(redis.call('GET', key) or '0')
  local allowed = math.max(0, math.min(n, limit - count))
  if allowed > 0 and redis.call('INCRBY', key, allowed) == allowed then
    redis.call('EXPIRE', key, ttl)
  end
  return count, allowed
end
`;

/**
 * Many requests' consumptions in one script call: KEYS one bucket per group, ARGV per group its
 * limit, ttl and number of requests -> per group the count before and how many were allowed.
 */
const RATE_LIMIT_MANY_LUA = `
${RATE_LIMIT_LUA}
local out = {}
for i = 1, #KEYS do
  local count, allowed = consume_requests(KEYS[i], tonumber(ARGV[3 * i - 2]), ARGV[3 * i - 1], tonumber(ARGV[3 * i]))
  out[#out + 1] = count
  out[#out + 1] = allowed
end
return out
`;

type WithRateLimit = Redis & {
  billingRateLimitMany(numberOfKeys: number, ...args: (string | number)[]): Promise<number[]>;
};

/**
 * Every request counted in one turn of the event loop goes to Redis in ONE script call: under
 * load, a Redis round trip (and the system calls and context switches it costs on both sides) is
 * shared by all the requests that arrived together, instead of one each.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly redis: WithRateLimit;
  private readonly consumptions: Batcher<Bucket, { count: number; allowed: boolean }>;

  /** `guard`: Redis' outage guard (the platform's), which bounds and fails fast every call. */
  constructor(
    redis: Redis,
    private readonly guard?: DependencyGuard,
  ) {
    if (!('billingRateLimitMany' in redis))
      redis.defineCommand('billingRateLimitMany', { lua: RATE_LIMIT_MANY_LUA });
    this.redis = redis as WithRateLimit;
    this.consumptions = new Batcher((batch) => this.consumeMany(batch), { lingerMs: 0, maxWeight: 1000 });
  }

  consume(bucket: string, limit: number, ttlSeconds: number): Promise<{ count: number; allowed: boolean }> {
    return this.consumptions.submit({ key: bucket, limit, ttlSeconds });
  }

  private async consumeMany(batch: Bucket[]): Promise<{ count: number; allowed: boolean }[]> {
    const groups = groupByBucket(batch);
    const args: (string | number)[] = groups.map(({ bucket }) => bucket!.key);
    for (const { bucket, members } of groups) args.push(bucket!.limit, bucket!.ttlSeconds, members.length);
    const consume = () => this.redis.billingRateLimitMany(groups.length, ...args);
    const out = await (this.guard ? this.guard.run(consume) : consume());
    const decisions: { count: number; allowed: boolean }[] = new Array(batch.length);
    groups.forEach(({ members }, g) => {
      members.forEach((position, nth) => {
        decisions[position] = nthDecision(out[2 * g]!, out[2 * g + 1]!, nth);
      });
    });
    return decisions;
  }
}
