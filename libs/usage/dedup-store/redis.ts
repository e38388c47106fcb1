import { Batcher } from '../../batching/index.js';
import type { DependencyGuard } from '../../dependency-guard/index.js';
import { groupByBucket, nthDecision, RATE_LIMIT_LUA } from '../../rate-limit/index.js';
import { BulkScript, type Redis, type ScriptArgument } from '../../redis/index.js';
import type {
  CountedBucket,
  CountedRead,
  CounterChange,
  CounterJournal,
  CounterState,
  DedupEntry,
  Reservation,
  ReservationResult,
  UsageDedupStore,
} from './store.js';

/** One check's counter read, and the request it counts (none: a plain read). */
interface CounterRead {
  keys: readonly string[];
  bucket: CountedBucket | undefined;
}

/** How long an item's period counter lives from its first change (a missing one is rebuilt). */
export const COUNTER_TTL_MS = 400 * 86_400_000;

/**
 * While a rebuild holds a counter's lease, its delta `w` carries this offset (2^62): beginRebuild
 * sets it, finishRebuild and abandonRebuild take it off, and readers take it off what they read.
 * So the counting of an event learns from HINCRBY's own answer whether to journal it (`w` above
 * LEASED_ABOVE), without asking the hash for its lease on every event. The delta of a period is
 * then bounded by 2^62 whole units either way (HINCRBY's range is 2^63): far beyond any usage.
 */
export const LEASE_OFFSET = 2n ** 62n;
const LEASED_ABOVE = 2n ** 61n;

/**
 * The counter functions every script shares (store.ts, UsageCounterStore). A counter is a hash:
 * b (base, decimal text, once rebuilt), w and f (the delta: whole units and 1e-8ths; w plus
 * LEASE_OFFSET while a rebuild holds the lease), s (the rebuild's lease) and jn (changes journaled
 * since the rebuild's cut, in the hash `<key>:j`).
 */
const COUNTER_LUA = `
local LEASED_ABOVE = ${LEASED_ABOVE}
local function count_in(key, whole, fraction, field)
  -- the hot path: one HINCRBY for a whole quantity, whose answer also tells a rebuild's lease
  -- (LEASE_OFFSET); the expiry set when the key is made (a period is at most a year: the counter
  -- outlives it)
  local w = redis.call('HINCRBY', key, 'w', whole)
  if w == tonumber(whole) then redis.call('PEXPIRE', key, ${COUNTER_TTL_MS}) end
  if fraction ~= '0' then redis.call('HINCRBY', key, 'f', fraction) end
  if w > LEASED_ABOVE then
    local journal = key .. ':j'
    redis.call('HSET', journal, field, whole .. ':' .. fraction)
    redis.call('HINCRBY', key, 'jn', 1)
    redis.call('PEXPIRE', journal, ${COUNTER_TTL_MS})
  end
end
local function uncount(key, whole, fraction, field)
  if redis.call('HEXISTS', key, 'b') == 1 then
    redis.call('HINCRBY', key, 'w', whole)
    redis.call('HINCRBY', key, 'f', fraction)
  elseif redis.call('HEXISTS', key, 's') == 1 and redis.call('HDEL', key .. ':j', field) == 1 then
    redis.call('HINCRBY', key, 'w', whole)
    redis.call('HINCRBY', key, 'f', fraction)
    redis.call('HINCRBY', key, 'jn', 1)
  end
end
-- takes the lease's offset off the delta, if it is there
local function unlease(key)
  if tonumber(redis.call('HGET', key, 'w') or '0') > LEASED_ABOVE then
    redis.call('HINCRBY', key, 'w', '-${LEASE_OFFSET}')
  end
end
`;
/**
 * The reservations of many requests in ONE script call (one Redis round trip per turn of the event
 * loop, whatever the number of requests), grouped by bucket so each bucket is counted once
 * (RATE_LIMIT_LUA's consume_requests, the rule every route counts with).
 *   ARGV[1] record ttl, ARGV[2] the number of counters n, then the n counter keys (each once per
 *   call), then per group: limit ('-1': not counted), bucket ttl, requests, then per request its
 *   entry count and per entry its pending record and its counter's number ('0': not counted),
 *   followed for a counted one by its whole, fraction and journal field. KEYS: per group its
 *   bucket, then one identity per entry of its requests.
 * Each entry of an allowed request is a SET NX GET; an entry found free (a new event) with a
 * counter is counted in it in the same step (docs/decisions.md, "Where the entitlement counter
 * lives and why"). Returns, per group: count before, requests allowed, then per entry the record
 * found (nil when it was free and is now reserved, or when its request was refused).
 */
export const RESERVE_LUA = `
${RATE_LIMIT_LUA}
${COUNTER_LUA}
local ttl = ARGV[1]
local counters = tonumber(ARGV[2])
local k, a = 1, 3 + counters
local out = {}
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
      local counter = ARGV[a + 1]
      if r <= allowed then
        existing = redis.call('SET', KEYS[k], ARGV[a], 'NX', 'GET', 'EX', ttl)
        if not existing and counter ~= '0' then
          count_in(ARGV[2 + tonumber(counter)], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
        end
      end
      out[#out + 1] = existing
      k = k + 1
      if counter == '0' then a = a + 2 else a = a + 5 end
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

/**
 * KEYS: identities; ARGV: per key its pending record, then its counter key (or ''), the negated
 * whole and fraction, the journal field. A released event is uncounted, only from the counter it
 * was counted in: one with a base, or the journal of the rebuild under way (an event reserved
 * before a rebuild's cut is in neither: the cut dropped it).
 */
const RELEASE_LUA = `
${COUNTER_LUA}
for i = 1, #KEYS do
  local a = (i - 1) * 5 + 1
  if redis.call('GET', KEYS[i]) == ARGV[a] then
    redis.call('DEL', KEYS[i])
    if ARGV[a + 1] ~= '' then uncount(ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]) end
  end
end
return #KEYS
`;

/**
 * The entitlement checks' reads of one turn, with the requests they count (store.ts,
 * readCountersCounting): KEYS the groups' buckets, then the counters; ARGV[1] the number of groups,
 * then per group its limit, bucket ttl and number of requests (RATE_LIMIT_LUA's consume_requests,
 * as every route counts). Returns first per group the count before and how many were allowed, then
 * per counter b, w, f, s.
 */
const READ_COUNTERS_LUA = `
${RATE_LIMIT_LUA}
local groups = tonumber(ARGV[1])
local counted = {}
for g = 1, groups do
  local count, allowed = consume_requests(KEYS[g], tonumber(ARGV[3 * g - 1]), ARGV[3 * g], tonumber(ARGV[3 * g + 1]))
  counted[#counted + 1] = count
  counted[#counted + 1] = allowed
end
local out = { counted }
for i = groups + 1, #KEYS do
  out[#out + 1] = redis.call('HMGET', KEYS[i], 'b', 'w', 'f', 's')
end
return out
`;

/** KEYS[1] counter; ARGV whole, fraction, journal field: a void's change. */
const ADJUST_LUA = `
${COUNTER_LUA}
count_in(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return 1
`;

/** KEYS[1] counter; ARGV token, deadline ms, now ms. The rebuild's cut: delta 0 (leased), journal on. */
const BEGIN_REBUILD_LUA = `
if redis.call('HEXISTS', KEYS[1], 'b') == 1 then return 'ready' end
local lease = redis.call('HGET', KEYS[1], 's')
if lease then
  local deadline = tonumber(string.match(lease, '|(%d+)$'))
  if deadline and deadline > tonumber(ARGV[3]) then return 'building' end
end
redis.call('HSET', KEYS[1], 's', ARGV[1] .. '|' .. ARGV[2], 'w', '${LEASE_OFFSET}', 'f', 0, 'jn', 0)
redis.call('DEL', KEYS[1] .. ':j')
redis.call('PEXPIRE', KEYS[1], ${COUNTER_TTL_MS})
return 'started'
`;

/** KEYS[1] counter: the journal count and the journal, read together. */
const READ_JOURNAL_LUA = `
return { redis.call('HGET', KEYS[1], 'jn') or '0', redis.call('HGETALL', KEYS[1] .. ':j') }
`;

/** KEYS[1] counter; ARGV token. */
const ABANDON_REBUILD_LUA = `
${COUNTER_LUA}
local lease = redis.call('HGET', KEYS[1], 's')
if not lease or string.sub(lease, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then return 0 end
unlease(KEYS[1])
redis.call('HDEL', KEYS[1], 's', 'jn')
redis.call('DEL', KEYS[1] .. ':j')
return 1
`;

/** KEYS[1] counter; ARGV token, base. */
const FINISH_REBUILD_LUA = `
${COUNTER_LUA}
local lease = redis.call('HGET', KEYS[1], 's')
if not lease or string.sub(lease, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then return 'lost' end
unlease(KEYS[1])
redis.call('HSET', KEYS[1], 'b', ARGV[2])
redis.call('HDEL', KEYS[1], 's', 'jn')
redis.call('DEL', KEYS[1] .. ':j')
return 'done'
`;

const RESERVE = new BulkScript(RESERVE_LUA);

type WithUsageScripts = Redis & {
  billingUsageRelease(numberOfKeys: number, ...args: ScriptArgument[]): Promise<number>;
  billingCounterRead(
    numberOfKeys: number,
    ...args: ScriptArgument[]
  ): Promise<[number[], ...(string | null)[][]]>;
  billingCounterAdjust(numberOfKeys: number, ...args: string[]): Promise<number>;
  billingCounterBegin(numberOfKeys: number, ...args: string[]): Promise<string>;
  billingCounterJournal(numberOfKeys: number, key: string): Promise<[string, string[]]>;
  billingCounterFinish(numberOfKeys: number, ...args: string[]): Promise<string>;
  billingCounterAbandon(numberOfKeys: number, key: string, token: string): Promise<number>;
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
  private readonly counterReads: Batcher<CounterRead, CountedRead>;
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
    if (!('billingCounterRead' in redis)) {
      redis.defineCommand('billingCounterRead', { lua: READ_COUNTERS_LUA });
      redis.defineCommand('billingCounterAdjust', { lua: ADJUST_LUA });
      redis.defineCommand('billingCounterBegin', { lua: BEGIN_REBUILD_LUA });
      redis.defineCommand('billingCounterJournal', { lua: READ_JOURNAL_LUA });
      redis.defineCommand('billingCounterFinish', { lua: FINISH_REBUILD_LUA });
      redis.defineCommand('billingCounterAbandon', { lua: ABANDON_REBUILD_LUA });
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
    // the entitlement checks of one turn read their counters in one script call
    this.counterReads = new Batcher((batch) => this.readCountersMany(batch), {
      lingerMs: 0,
      maxWeight: 1000,
      weight: (read) => read.keys.length + 1,
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

  async readCounters(keys: readonly string[]): Promise<CounterState[]> {
    if (!keys.length) return [];
    return (await this.counterReads.submit({ keys, bucket: undefined })).states;
  }

  readCountersCounting(keys: readonly string[], bucket: CountedBucket): Promise<CountedRead> {
    return this.counterReads.submit({ keys, bucket });
  }

  /** One script call for the turn's reads and the requests they count, grouped by bucket. */
  private async readCountersMany(batch: CounterRead[]): Promise<CountedRead[]> {
    const groups = groupByBucket(batch.map((read) => read.bucket)).filter((group) => group.bucket);
    const args: ScriptArgument[] = groups.map((group) => group.bucket!.key);
    for (const read of batch) for (const key of read.keys) args.push(key);
    args.push(groups.length);
    for (const { bucket, members } of groups) args.push(bucket!.limit, bucket!.ttlSeconds, members.length);
    const keyCount = args.length - 1 - 3 * groups.length;
    const [counted, ...rows] = await this.call(() => this.redis.billingCounterRead(keyCount, ...args));
    const results: CountedRead[] = new Array(batch.length);
    let at = 0;
    for (let i = 0; i < batch.length; i++) {
      const states: CounterState[] = [];
      for (const [base, whole, fraction, lease] of rows.slice(at, at + batch[i]!.keys.length)) {
        states.push({
          base: base ?? null,
          whole: withoutLease(BigInt(whole ?? 0)),
          fraction: BigInt(fraction ?? 0),
          lease: lease ?? null,
        });
      }
      at += batch[i]!.keys.length;
      results[i] = { count: 0, allowed: true, states };
    }
    groups.forEach(({ members }, g) => {
      members.forEach((position, nth) => {
        const { count, allowed } = nthDecision(counted[2 * g]!, counted[2 * g + 1]!, nth);
        results[position]!.count = count;
        results[position]!.allowed = allowed;
      });
    });
    return results;
  }

  async adjustCounter(change: CounterChange): Promise<void> {
    await this.call(() =>
      this.redis.billingCounterAdjust(1, change.key, change.whole, change.fraction, change.field),
    );
  }

  async beginRebuild(
    key: string,
    token: string,
    deadlineMs: number,
    nowMs: number,
  ): Promise<'ready' | 'building' | 'started'> {
    return (await this.call(() =>
      this.redis.billingCounterBegin(1, key, token, String(deadlineMs), String(nowMs)),
    )) as 'ready' | 'building' | 'started';
  }

  async readJournal(key: string): Promise<CounterJournal> {
    const [count, flat] = await this.call(() => this.redis.billingCounterJournal(1, key));
    const entries = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) entries.set(flat[i]!, flat[i + 1]!);
    return { count: String(count), entries };
  }

  async finishRebuild(key: string, token: string, base: string): Promise<'done' | 'lost'> {
    return (await this.call(() => this.redis.billingCounterFinish(1, key, token, base))) as 'done' | 'lost';
  }

  async abandonRebuild(key: string, token: string): Promise<void> {
    await this.call(() => this.redis.billingCounterAbandon(1, key, token));
  }

  private call<T>(command: () => Promise<T>): Promise<T> {
    return this.guard ? this.guard.run(command) : command();
  }

  async flush(): Promise<void> {
    await Promise.all([this.reservations.flush(), this.releases.flush(), this.counterReads.flush()]);
  }

  /** One script call. Every caller passes the same ttl (the configured one). */
  private async run(batch: Reservation[]): Promise<ReservationResult[]> {
    const groups = groupByBucket(batch.map((reservation) => reservation.bucket));
    const keys: string[] = [];
    // the counter keys, each once, then the rest (see RESERVE_LUA)
    const counterKeys: string[] = [];
    const counterNumbers = new Map<string, number>();
    const args: ScriptArgument[] = [];
    for (const { bucket, members } of groups) {
      keys.push(bucket?.key ?? this.placeholderBucket);
      args.push(bucket ? bucket.limit : -1, bucket ? bucket.ttlSeconds : 0, members.length);
      for (const position of members) {
        const { entries } = batch[position]!;
        args.push(entries.length);
        for (const entry of entries) {
          keys.push(entry.key);
          const counter = entry.counter;
          if (!counter) {
            args.push(entry.pending, 0);
            continue;
          }
          let number = counterNumbers.get(counter.key);
          if (number === undefined) {
            number = counterKeys.push(counter.key);
            counterNumbers.set(counter.key, number);
          }
          args.push(entry.pending, number, counter.whole, counter.fraction, counter.field);
        }
      }
    }
    const reply = (await this.call(() =>
      RESERVE.call(this.redis, keys.length, [
        ...keys,
        batch[0]!.ttlSeconds,
        counterKeys.length,
        ...counterKeys,
        ...args,
      ]),
    )) as (number | string | null)[];
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
        const counter = entry.counter;
        if (counter) {
          args.push(
            entry.pending,
            counter.key,
            negate(counter.whole),
            negate(counter.fraction),
            counter.field,
          );
        } else args.push(entry.pending, '', '', '', '');
      }
    }
    if (keys.length) await this.call(() => this.redis.billingUsageRelease(keys.length, ...keys, ...args));
    return batch.map(() => undefined);
  }
}

/** A delta as read: without the lease's offset (LEASE_OFFSET) a rebuild under way adds to it. */
export function withoutLease(whole: bigint): bigint {
  return whole > LEASED_ABOVE ? whole - LEASE_OFFSET : whole;
}

/** The text of -n for an integer's text. */
export function negate(integer: string): string {
  if (integer === '0') return '0';
  return integer.startsWith('-') ? integer.slice(1) : `-${integer}`;
}
