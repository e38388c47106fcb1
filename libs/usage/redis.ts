import { Batcher } from '../batching/index.js';
import { RATE_LIMIT_LUA } from '../rate-limit/index.js';
import type { Redis } from '../redis/index.js';
import type { DedupEntry, Reservation, ReservationResult, UsageDedupStore } from './store.js';

/**
 * Commits, then reservations, of many requests in ONE script call (one Redis round trip per turn
 * of the event loop, whatever the number of requests). The rate-limit step is the shared
 * RATE_LIMIT_LUA (consume_request, save_buckets), so every route counts with the same rule.
 *   ARGV[1] pending ttl, ARGV[2] committed ttl, ARGV[3] commits, ARGV[4] reservations, then
 *   per commit: pending record, committed record (KEYS: its identity);
 *   per reservation: limit ('-1': not counted), bucket ttl, entry count, one pending record per
 *   entry (KEYS: its bucket, then one identity per entry).
 * A commit replaces the record only if it is still the caller's pending one; a reservation is a
 * SET NX GET. Returns, per reservation: count, allowed, then per entry the record found (nil when
 * it was free and is now reserved).
 */
export const RESERVE_LUA = `
${RATE_LIMIT_LUA}
local k, a = 1, 5
for _ = 1, tonumber(ARGV[3]) do
  local previous = redis.call('SET', KEYS[k], ARGV[a + 1], 'XX', 'GET', 'EX', ARGV[2])
  if previous and previous ~= ARGV[a] then
    -- Not ours any more (ours expired and another request reserved it): put that one back, for
    -- as long as a record of its state lives (a committed one must not shrink to the pending ttl).
    local ttl = ARGV[1]
    if string.sub(previous, 1, 1) == 'C' then ttl = ARGV[2] end
    redis.call('SET', KEYS[k], previous, 'EX', ttl)
  end
  k = k + 1
  a = a + 2
end
local out = {}
for _ = 1, tonumber(ARGV[4]) do
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
  billingUsageRelease(numberOfKeys: number, ...args: ScriptArgument[]): Promise<number>;
};

type Operation =
  | { kind: 'reserve'; reservation: Reservation }
  | {
      kind: 'commit';
      entries: readonly { key: string; pending: string; committed: string }[];
      ttlSeconds: number;
    };

/**
 * Redis behind the dedup port. Every reservation and commit of one turn of the event loop (all the
 * requests that arrived in one network read, all the events one produce call acknowledged) go to
 * Redis as ONE script call: each request costs exactly one round trip on its way in, shared with
 * its neighbours, and its commit rides along with later requests' reservations.
 */
export class RedisUsageDedupStore implements UsageDedupStore {
  private readonly redis: WithUsageScripts;
  private readonly operations: Batcher<Operation, ReservationResult | undefined>;
  private readonly releases: Batcher<readonly DedupEntry[], undefined>;
  private readonly placeholderBucket: string;

  constructor(redis: Redis, keyPrefix: string) {
    if (!('billingUsageReserve' in redis)) {
      redis.defineCommand('billingUsageReserve', { lua: RESERVE_LUA });
      redis.defineCommand('billingUsageRelease', { lua: RELEASE_LUA });
    }
    this.redis = redis as WithUsageScripts;
    this.placeholderBucket = `${keyPrefix}usage:uncounted`;
    const maxWeight = 5000;
    this.operations = new Batcher((batch) => this.run(batch), {
      lingerMs: 0,
      maxWeight,
      weight: (operation) =>
        operation.kind === 'reserve' ? operation.reservation.entries.length + 1 : operation.entries.length,
    });
    this.releases = new Batcher((batch) => this.releaseMany(batch), {
      lingerMs: 0,
      maxWeight,
      weight: (entries) => entries.length,
    });
  }

  async reserve(reservation: Reservation): Promise<ReservationResult> {
    return (await this.operations.submit({ kind: 'reserve', reservation }))!;
  }

  async commit(
    entries: readonly { key: string; pending: string; committed: string }[],
    ttlSeconds: number,
  ): Promise<void> {
    await this.operations.submit({ kind: 'commit', entries, ttlSeconds });
  }

  async release(entries: readonly DedupEntry[]): Promise<void> {
    await this.releases.submit(entries);
  }

  get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  async flush(): Promise<void> {
    await Promise.all([this.operations.flush(), this.releases.flush()]);
  }

  /** One script call. Every caller passes the same two ttls (the configured ones). */
  private async run(batch: Operation[]): Promise<(ReservationResult | undefined)[]> {
    const commitKeys: string[] = [];
    const commitArgs: ScriptArgument[] = [];
    const keys: string[] = [];
    const args: ScriptArgument[] = [];
    let reservations = 0;
    let pendingTtl = 60;
    let committedTtl = 60;
    for (const operation of batch) {
      if (operation.kind === 'commit') {
        committedTtl = operation.ttlSeconds;
        for (const entry of operation.entries) {
          commitKeys.push(entry.key);
          commitArgs.push(entry.pending, entry.committed);
        }
        continue;
      }
      const { bucket, entries, pendingTtlSeconds } = operation.reservation;
      pendingTtl = pendingTtlSeconds;
      reservations++;
      keys.push(bucket?.key ?? this.placeholderBucket);
      args.push(bucket ? bucket.limit : -1, bucket ? bucket.ttlSeconds : 0, entries.length);
      for (const entry of entries) {
        keys.push(entry.key);
        args.push(entry.pending);
      }
    }
    const reply = await this.redis.billingUsageReserve(
      commitKeys.length + keys.length,
      ...commitKeys,
      ...keys,
      pendingTtl,
      committedTtl,
      commitKeys.length,
      reservations,
      ...commitArgs,
      ...args,
    );
    let at = 0;
    return batch.map((operation) => {
      if (operation.kind === 'commit') return undefined;
      const count = Number(reply[at]);
      const allowed = Number(reply[at + 1]) === 1;
      at += 2;
      const existing: (string | null)[] = [];
      for (let i = 0; i < operation.reservation.entries.length; i++) {
        existing.push((reply[at++] as string | null) ?? null);
      }
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
