import { Batcher } from '../../batching/index.js';
import type { DependencyGuard } from '../../dependency-guard/index.js';
import { groupByBucket, nthDecision, RATE_LIMIT_LUA } from '../../rate-limit/index.js';
import { BulkScript, type Redis, type ScriptArgument } from '../../redis/index.js';
import type { DedupEntry, Reservation, ReservationResult, UsageDedupStore } from './store.js';

/**
 * The reservations of many requests in ONE script call (one Redis round trip per turn of the event
 * loop, whatever the number of requests), grouped by bucket so each bucket is counted once
 * (RATE_LIMIT_LUA's consume_requests, the rule every route counts with).
 *   ARGV[1] record ttl, then per group: limit ('-1': not counted), bucket ttl, requests, then per
 *   request its entry count and one pending record per entry. KEYS: per group its bucket, then one
 *   identity per entry of its requests.
 * Each entry of an allowed request is a SET NX GET. Returns, per group: count before, requests
 * allowed, then per entry the record found (nil when it was free and is now reserved, or when its
 * request was refused).
 */
export const RESERVE_LUA = `
${RATE_LIMIT_LUA}
local k, a = 1, 2
local out = {}
local ttl = ARGV[1]
while a <= #ARGV do
  local limit, requests = tonumber(ARGV[a]), tonumber(ARGV[a + 2])
  local count, allowed = 0, requests
  if limit >= 0 then count, allowed = consume_requests(KEYS[k], limit, ARGV[a + 1], requests) end
  k = k + 1
  a = a + 3
  out[#out + 1] = count
  out[#out + 1] = allowed
  for r = 1, requests do
    local n = tonumber(ARGV[a])
    a = a + 1
    for _ = 1, n do
      local existing = false
      if r <= allowed then existing = redis.call('SET', KEYS[k], ARGV[a], 'NX', 'GET', 'EX', ttl) end
      out[#out + 1] = existing
      k = k + 1
      a = a + 1
    end
  end
end
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

  /** `guard`: Redis' outage guard (the platform's), which bounds and fails fast every call. */
  constructor(
    redis: Redis,
    keyPrefix: string,
    private readonly guard?: DependencyGuard,
  ) {
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
    return this.call(() => this.redis.billingUsageReplace(1, key, expected, next, ttlSeconds));
  }

  async release(entries: readonly DedupEntry[]): Promise<void> {
    await this.releases.submit(entries);
  }

  get(key: string): Promise<string | null> {
    return this.call(() => this.redis.get(key));
  }

  private call<T>(command: () => Promise<T>): Promise<T> {
    return this.guard ? this.guard.run(command) : command();
  }

  async flush(): Promise<void> {
    await Promise.all([this.reservations.flush(), this.releases.flush()]);
  }

  /** One script call. Every caller passes the same ttl (the configured one). */
  private async run(batch: Reservation[]): Promise<ReservationResult[]> {
    const groups = groupByBucket(batch.map((reservation) => reservation.bucket));
    const keys: string[] = [];
    const args: ScriptArgument[] = [batch[0]!.ttlSeconds];
    for (const { bucket, members } of groups) {
      keys.push(bucket?.key ?? this.placeholderBucket);
      args.push(bucket ? bucket.limit : -1, bucket ? bucket.ttlSeconds : 0, members.length);
      for (const position of members) {
        const { entries } = batch[position]!;
        args.push(entries.length);
        for (const entry of entries) {
          keys.push(entry.key);
          args.push(entry.pending);
        }
      }
    }
    const reply = (await this.call(() => RESERVE.call(this.redis, keys.length, [...keys, ...args]))) as (
      | number
      | string
      | null
    )[];
    const results: ReservationResult[] = new Array(batch.length);
    let at = 0;
    for (const { bucket, members } of groups) {
      const countBefore = Number(reply[at]);
      const allowed = Number(reply[at + 1]);
      at += 2;
      members.forEach((position, nth) => {
        const decision = bucket ? nthDecision(countBefore, allowed, nth) : { count: 0, allowed: true };
        const existing: (string | null)[] = [];
        for (let i = 0; i < batch[position]!.entries.length; i++)
          existing.push((reply[at++] as string | null) ?? null);
        results[position] = { ...decision, existing };
      });
    }
    return results;
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
    if (keys.length) await this.call(() => this.redis.billingUsageRelease(keys.length, ...keys, ...args));
    return batch.map(() => undefined);
  }
}
