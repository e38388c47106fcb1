import { Batcher } from '../batching/index.js';
import { RATE_LIMIT_LUA } from '../rate-limit/index.js';
import { BulkScript, type Redis, type ScriptArgument } from '../redis/index.js';
import type { DedupEntry, Reservation, ReservationResult, UsageDedupStore } from './store.js';

/**
 * The reservations of many requests in ONE script call (one Redis round trip per turn of the event
 * loop, whatever the number of requests). The rate-limit step is the shared RATE_LIMIT_LUA
 * (consume_request, save_buckets), so every route counts with the same rule.
 *   ARGV[1] record ttl, ARGV[2] reservations, then per reservation: limit ('-1': not counted),
 *   bucket ttl, entry count, one pending record per entry (KEYS: its bucket, then one identity
 *   per entry).
 * Each entry is a SET NX GET. Returns, per reservation: count, allowed, then per entry the record
 * found (nil when it was free and is now reserved).
 */
export const RESERVE_LUA = `
${RATE_LIMIT_LUA}
local k, a = 1, 3
local out = {}
for _ = 1, tonumber(ARGV[2]) do
  local limit, bucket_ttl, n = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  a = a + 3
  local count, allowed = 0, 1
  if limit ~= '-1' then
    local decision = consume_request(KEYS[k], limit, bucket_ttl)
    count, allowed = decision[1], decision[2]
  end
  k = k + 1
  out[#out + 1] = count
  out[#out + 1] = allowed
  for _ = 1, n do
    local existing = false
    if allowed == 1 then
      existing = redis.call('SET', KEYS[k], ARGV[a], 'NX', 'GET', 'EX', ARGV[1])
    end
    out[#out + 1] = existing
    k = k + 1
    a = a + 1
  end
end
save_buckets()
return out
`;

/** KEYS[1] identity; ARGV: expected record, next record, ttl. Returns the record there now. */
const REPLACE_LUA = `
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[1] then return current end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return ARGV[2]
`;

/** KEYS: identities; ARGV: per key its pending record. */
const RELEASE_LUA = `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then redis.call('DEL', KEYS[i]) end
end
return #KEYS
`;

const RESERVE = new BulkScript(RESERVE_LUA);

type WithUsageScripts = Redis & {
  billingUsageRelease(numberOfKeys: number, ...args: ScriptArgument[]): Promise<number>;
  billingUsageReplace(
    numberOfKeys: number,
    key: string,
    expected: string,
    next: string,
    ttlSeconds: number,
  ): Promise<string | null>;
};

/**
 * Redis behind the dedup port. Every reservation of one turn of the event loop (all the requests
 * that arrived in one network read) goes to Redis as ONE script call: each request costs exactly
 * one round trip, shared with its neighbours, and each new event one SET.
 */
export class RedisUsageDedupStore implements UsageDedupStore {
  private readonly redis: WithUsageScripts;
  private readonly reservations: Batcher<Reservation, ReservationResult>;
  private readonly releases: Batcher<readonly DedupEntry[], undefined>;
  private readonly placeholderBucket: string;

  constructor(redis: Redis, keyPrefix: string) {
    if (!('billingUsageRelease' in redis)) {
      redis.defineCommand('billingUsageRelease', { lua: RELEASE_LUA });
      redis.defineCommand('billingUsageReplace', { lua: REPLACE_LUA });
    }
    this.redis = redis as WithUsageScripts;
    this.placeholderBucket = `${keyPrefix}usage:uncounted`;
    const maxWeight = 5000;
    this.reservations = new Batcher((batch) => this.run(batch), {
      lingerMs: 0,
      maxWeight,
      weight: (reservation) => reservation.entries.length + 1,
    });
    this.releases = new Batcher((batch) => this.releaseMany(batch), {
      lingerMs: 0,
      maxWeight,
      weight: (entries) => entries.length,
    });
  }

  reserve(reservation: Reservation): Promise<ReservationResult> {
    return this.reservations.submit(reservation);
  }

  replace(key: string, expected: string, next: string, ttlSeconds: number): Promise<string | null> {
    return this.redis.billingUsageReplace(1, key, expected, next, ttlSeconds);
  }

  async release(entries: readonly DedupEntry[]): Promise<void> {
    await this.releases.submit(entries);
  }

  get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  async flush(): Promise<void> {
    await Promise.all([this.reservations.flush(), this.releases.flush()]);
  }

  /** One script call. Every caller passes the same ttl (the configured one). */
  private async run(batch: Reservation[]): Promise<ReservationResult[]> {
    const keys: string[] = [];
    const args: ScriptArgument[] = [];
    for (const { bucket, entries } of batch) {
      keys.push(bucket?.key ?? this.placeholderBucket);
      args.push(bucket ? bucket.limit : -1, bucket ? bucket.ttlSeconds : 0, entries.length);
      for (const entry of entries) {
        keys.push(entry.key);
        args.push(entry.pending);
      }
    }
    const reply = (await RESERVE.call(this.redis, keys.length, [
      ...keys,
      batch[0]!.ttlSeconds,
      batch.length,
      ...args,
    ])) as (number | string | null)[];
    let at = 0;
    return batch.map(({ entries }) => {
      const count = Number(reply[at]);
      const allowed = Number(reply[at + 1]) === 1;
      at += 2;
      const existing: (string | null)[] = [];
      for (let i = 0; i < entries.length; i++) existing.push((reply[at++] as string | null) ?? null);
      return { count, allowed, existing };
    });
  }

  private async releaseMany(batch: (readonly DedupEntry[])[]): Promise<undefined[]> {
    const keys: string[] = [];
    const args: string[] = [];
    for (const entries of batch) {
      for (const entry of entries) {
        keys.push(entry.key);
        args.push(entry.pending);
      }
    }
    if (keys.length) await this.redis.billingUsageRelease(keys.length, ...keys, ...args);
    return batch.map(() => undefined);
  }
}
