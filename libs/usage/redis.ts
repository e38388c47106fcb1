import { Batcher } from '../batching/index.js';
import { RATE_LIMIT_LUA } from '../rate-limit/index.js';
import type { Redis } from '../redis/index.js';
import type { DedupEntry, Reservation, ReservationResult, UsageDedupStore } from './store.js';

/**
 * Many reservations in one script call. The rate-limit step is the shared RATE_LIMIT_LUA, run as
 * a function whose parameters shadow KEYS and ARGV, so every route counts with the same rule.
 *   KEYS: per reservation, its bucket then one key per entry
 *   ARGV[1] pending ttl, ARGV[2] number of reservations, then per reservation:
 *     limit ('-1': not counted), bucket ttl, entry count, one pending record per entry
 * Returns, per reservation: count, allowed, then per entry the record found (nil when reserved).
 */
export const RESERVE_LUA = `
local function consume_request(KEYS, ARGV)
${RATE_LIMIT_LUA}
end
local out = {}
local k, a = 1, 3
for _ = 1, tonumber(ARGV[2]) do
  local limit, bucket_ttl, n = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  a = a + 3
  local count, allowed = 0, 1
  if limit ~= '-1' then
    local decision = consume_request({ KEYS[k] }, { limit, bucket_ttl })
    count, allowed = decision[1], decision[2]
  end
  k = k + 1
  out[#out + 1] = count
  out[#out + 1] = allowed
  for _ = 1, n do
    local existing = false
    if allowed == 1 then
      existing = redis.call('GET', KEYS[k])
      if not existing then redis.call('SET', KEYS[k], ARGV[a], 'EX', ARGV[1]) end
    end
    out[#out + 1] = existing
    k = k + 1
    a = a + 1
  end
end
return out
`;

/** KEYS: identities; ARGV[1] ttl, then per key its pending and committed records. */
const COMMIT_LUA = `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[2 * i] then
    redis.call('SET', KEYS[i], ARGV[2 * i + 1], 'EX', ARGV[1])
  end
end
return #KEYS
`;

/** KEYS: identities; ARGV: per key its pending record. */
const RELEASE_LUA = `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then redis.call('DEL', KEYS[i]) end
end
return #KEYS
`;

type ScriptArgument = string | number;
type WithUsageScripts = Redis & {
  billingUsageReserve(numberOfKeys: number, ...args: ScriptArgument[]): Promise<(number | string | null)[]>;
  billingUsageCommit(numberOfKeys: number, ...args: ScriptArgument[]): Promise<number>;
  billingUsageRelease(numberOfKeys: number, ...args: ScriptArgument[]): Promise<number>;
};

interface Commit {
  entries: readonly { key: string; pending: string; committed: string }[];
  ttlSeconds: number;
}

/**
 * Redis behind the dedup port. Concurrent reservations (every request that arrived in one turn of
 * the event loop) go to Redis as ONE script call; so do commits and releases. Each request still
 * costs exactly one round trip on its way in, shared with its neighbours.
 */
export class RedisUsageDedupStore implements UsageDedupStore {
  private readonly redis: WithUsageScripts;
  private readonly reservations: Batcher<Reservation, ReservationResult>;
  private readonly commits: Batcher<Commit, void>;
  private readonly releases: Batcher<readonly DedupEntry[], void>;
  private readonly placeholderBucket: string;

  constructor(redis: Redis, keyPrefix: string) {
    if (!('billingUsageReserve' in redis)) {
      redis.defineCommand('billingUsageReserve', { lua: RESERVE_LUA });
      redis.defineCommand('billingUsageCommit', { lua: COMMIT_LUA });
      redis.defineCommand('billingUsageRelease', { lua: RELEASE_LUA });
    }
    this.redis = redis as WithUsageScripts;
    this.placeholderBucket = `${keyPrefix}usage:uncounted`;
    const maxWeight = 5000;
    this.reservations = new Batcher((batch) => this.reserveMany(batch), {
      lingerMs: 0,
      maxWeight,
      weight: (reservation) => reservation.entries.length + 1,
    });
    this.commits = new Batcher((batch) => this.commitMany(batch), {
      lingerMs: 0,
      maxWeight,
      weight: (commit) => commit.entries.length,
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

  commit(entries: Commit['entries'], ttlSeconds: number): Promise<void> {
    return this.commits.submit({ entries, ttlSeconds });
  }

  release(entries: readonly DedupEntry[]): Promise<void> {
    return this.releases.submit(entries);
  }

  get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  async flush(): Promise<void> {
    await Promise.all([this.reservations.flush(), this.commits.flush(), this.releases.flush()]);
  }

  private async reserveMany(batch: Reservation[]): Promise<ReservationResult[]> {
    const keys: string[] = [];
    const args: ScriptArgument[] = [batch[0]!.pendingTtlSeconds, batch.length];
    for (const { bucket, entries } of batch) {
      keys.push(bucket?.key ?? this.placeholderBucket);
      args.push(bucket ? bucket.limit : -1, bucket ? bucket.ttlSeconds : 0, entries.length);
      for (const entry of entries) {
        keys.push(entry.key);
        args.push(entry.pending);
      }
    }
    const reply = await this.redis.billingUsageReserve(keys.length, ...keys, ...args);
    const results: ReservationResult[] = [];
    let at = 0;
    for (const { entries } of batch) {
      const count = Number(reply[at]);
      const allowed = Number(reply[at + 1]) === 1;
      at += 2;
      const existing: (string | null)[] = [];
      for (let i = 0; i < entries.length; i++) existing.push((reply[at++] as string | null) ?? null);
      results.push({ count, allowed, existing });
    }
    return results;
  }

  private async commitMany(batch: Commit[]): Promise<undefined[]> {
    // One ttl per call: every caller passes the configured idempotency ttl.
    const keys: string[] = [];
    const args: ScriptArgument[] = [batch[0]!.ttlSeconds];
    for (const { entries } of batch) {
      for (const entry of entries) {
        keys.push(entry.key);
        args.push(entry.pending, entry.committed);
      }
    }
    if (keys.length) await this.redis.billingUsageCommit(keys.length, ...keys, ...args);
    return batch.map(() => undefined);
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
