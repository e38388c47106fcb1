import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../libs/rate-limit/index.js';
import { connectRedis, type Redis } from '../../libs/redis/index.js';
import { COUNTER_TTL_MS } from '../../libs/usage/dedup-store/redis.js';
import {
  type DedupEntry,
  MemoryUsageDedupStore,
  RedisUsageDedupStore,
  type UsageDedupStore,
} from '../../libs/usage/index.js';
import { testServices, uniqueName } from '../helpers/services.js';

/*
 * The counters' contract in both stores (redis.ts and its memory twin): an event is counted only
 * when its reservation finds it new, uncounted only from the counter it was counted in when its
 * reservation is released, journaled while a rebuild is under way; a rebuild's base is set only
 * under its own lease.
 */

const TTL = 30 * 86_400;
let redis: Redis;
let prefix: string;

beforeAll(async () => {
  redis = await connectRedis(testServices().redisUrl, 2000);
  prefix = `${uniqueName('counter')}:`;
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

describe.each([
  ['RedisUsageDedupStore', () => new RedisUsageDedupStore(redis, prefix)],
  ['MemoryUsageDedupStore', () => new MemoryUsageDedupStore(new MemoryRateLimitStore())],
] as const)('%s', (name, makeStore) => {
  let store: UsageDedupStore;
  let n = 0;
  const fresh = () => `${prefix}${name}-${++n}`;
  const entry = (counter: string, key: string, whole: string, fraction: string) => ({
    key: `${counter}:id:${key}`,
    pending: `P|${key}`,
    counter: { key: counter, whole, fraction, field: `e:${key}` },
  });
  const reserve = (...entries: DedupEntry[]) =>
    store.reserve({ bucket: undefined, entries, ttlSeconds: TTL });
  const state = async (counter: string) => (await store.readCounters([counter]))[0]!;

  beforeAll(() => {
    store = makeStore();
  });

  it('counts new events only, whole units and 1e-8ths apart; a release uncounts from a built counter', async () => {
    const counter = fresh();
    expect(await store.beginRebuild(counter, 't', Date.now() + 10_000, Date.now())).toBe('started');
    expect(await store.finishRebuild(counter, 't', '5.00000000')).toBe('done');
    await reserve(entry(counter, 'a', '1', '50000000'), entry(counter, 'b', '1000000000000000', '1'));
    await reserve(entry(counter, 'a', '1', '50000000'));
    expect(await state(counter)).toMatchObject({
      base: '5.00000000',
      whole: 1000000000000001n,
      fraction: 50000001n,
    });
    await store.release([entry(counter, 'b', '1000000000000000', '1')]);
    await store.flush();
    expect(await state(counter)).toMatchObject({ whole: 1n, fraction: 50000000n });
    // released twice (or someone else's record there): nothing more
    await store.release([entry(counter, 'b', '1000000000000000', '1')]);
    await store.flush();
    expect(await state(counter)).toMatchObject({ whole: 1n, fraction: 50000000n });
  });

  it('while a rebuild runs: changes are journaled, a release takes its journal entry back, the base is set under the lease', async () => {
    const counter = fresh();
    // counted before the cut (no base): the cut drops it, whole units and 1e-8ths, the stored events hold it
    await reserve(entry(counter, 'before', '7', '30'));
    expect(await store.beginRebuild(counter, 'mine', Date.now() + 10_000, Date.now())).toBe('started');
    expect(await store.beginRebuild(counter, 'other', Date.now() + 10_000, Date.now())).toBe('building');
    expect(await state(counter)).toMatchObject({ base: null, whole: 0n, fraction: 0n });
    await reserve(entry(counter, 'during', '2', '0'));
    await store.adjustCounter({ key: counter, whole: '-1', fraction: '-25000000', field: 'v:some-event' });
    const journal = await store.readJournal(counter);
    expect(journal.count).toBe('2');
    expect([...journal.entries]).toEqual([
      ['e:during', '2:0'],
      ['v:some-event', '-1:-25000000'],
    ]);
    // a change after the journal was read: journaled too
    await reserve(entry(counter, 'late', '1', '40'));
    // a release of a journaled event (appended nowhere): out of the journal and the delta, 1e-8ths included
    await store.release([entry(counter, 'late', '1', '40')]);
    await store.flush();
    // a release of an event counted before the cut: the cut dropped it already, nothing to take back
    await store.release([entry(counter, 'before', '7', '30')]);
    await store.flush();
    const again = await store.readJournal(counter);
    expect(again.count).toBe('4');
    expect([...again.entries.keys()]).toEqual(['e:during', 'v:some-event']);
    expect(await store.finishRebuild(counter, 'other', '7.00000000')).toBe('lost');
    expect(await store.finishRebuild(counter, 'mine', '7.00000000')).toBe('done');
    expect(await state(counter)).toMatchObject({
      base: '7.00000000',
      whole: 1n,
      fraction: -25000000n,
      lease: null,
    });
    expect(await store.beginRebuild(counter, 'x', Date.now() + 10_000, Date.now())).toBe('ready');
  });

  it('a void first after the cut takes the delta below zero: journaled all the same, the lease taken off at the end', async () => {
    // Redis keeps the lease as an offset on the delta: a void before any event of the rebuild
    // puts it under that offset, where it must still read as leased, and then as unleased. (Its
    // scripts see the delta as a double: a void of a few units would round back up to the offset.)
    const counter = fresh();
    expect(await store.beginRebuild(counter, 'mine', Date.now() + 10_000, Date.now())).toBe('started');
    await store.adjustCounter({ key: counter, whole: '-5000', fraction: '-50000000', field: 'v:first' });
    const journal = await store.readJournal(counter);
    expect(journal.count).toBe('1');
    expect([...journal.entries]).toEqual([['v:first', '-5000:-50000000']]);
    // read while leased: the delta itself, below zero, not the lease's offset
    expect(await state(counter)).toMatchObject({ base: null, whole: -5000n, fraction: -50000000n });
    expect(await store.finishRebuild(counter, 'mine', '10.00000000')).toBe('done');
    expect(await state(counter)).toMatchObject({ base: '10.00000000', whole: -5000n, lease: null });
    // built: the next event counts in the delta and is journaled nowhere
    await reserve(entry(counter, 'after', '1', '0'));
    expect(await state(counter)).toMatchObject({ whole: -4999n, fraction: -50000000n });
    expect([...(await store.readJournal(counter)).entries]).toEqual([]);
    if (name === 'RedisUsageDedupStore') expect(await redis.hget(counter, 'w')).toBe('-4999');
  });

  it('one call with several counters, uncounted entries and repeats counts each event in its own counter', async () => {
    const [first, second] = [fresh(), fresh()];
    for (const counter of [first, second]) {
      expect(await store.beginRebuild(counter, 't', Date.now() + 10_000, Date.now())).toBe('started');
    }
    // `second` is being rebuilt through the call: its events are journaled, `first`'s are not
    expect(await store.finishRebuild(first, 't', '0')).toBe('done');
    const uncounted = { key: `${first}:id:uncounted`, pending: 'P|uncounted' };
    const results = await Promise.all([
      reserve(entry(first, 'a', '1', '0'), uncounted, entry(second, 'b', '2', '0')),
      reserve(entry(second, 'c', '3', '10'), entry(first, 'd', '4', '0'), entry(first, 'a', '1', '0')),
    ]);
    expect(results.map((r) => r.existing.map((found) => found !== null))).toEqual([
      [false, false, false],
      [false, false, true],
    ]);
    expect(await state(first)).toMatchObject({ whole: 5n, fraction: 0n, lease: null });
    expect(await state(second)).toMatchObject({ base: null, whole: 5n, fraction: 10n });
    expect([...(await store.readJournal(second)).entries]).toEqual([
      ['e:b', '2:0'],
      ['e:c', '3:10'],
    ]);
    expect((await store.readJournal(first)).entries.size).toBe(0);
    expect(await store.finishRebuild(second, 't', '1')).toBe('done');
    expect(await state(second)).toMatchObject({ base: '1', whole: 5n, fraction: 10n, lease: null });
    // built: no longer journaled
    await reserve(entry(second, 'e', '1', '0'));
    expect(await state(second)).toMatchObject({ whole: 6n });
    expect((await store.readJournal(second)).entries.size).toBe(0);
  });

  it('an abandoned rebuild lets the next reader start at once; only its holder can abandon it', async () => {
    const counter = fresh();
    expect(await store.beginRebuild(counter, 'failed', Date.now() + 10_000, Date.now())).toBe('started');
    await reserve(entry(counter, 'during', '1', '0'));
    await store.abandonRebuild(counter, 'someone-else');
    expect(await store.beginRebuild(counter, 'next', Date.now() + 10_000, Date.now())).toBe('building');
    await store.abandonRebuild(counter, 'failed');
    expect((await store.readJournal(counter)).entries.size).toBe(0);
    // no lease left: the delta reads as it is and later events are not journaled
    expect(await state(counter)).toMatchObject({ base: null, whole: 1n, lease: null });
    await reserve(entry(counter, 'after', '1', '0'));
    expect((await store.readJournal(counter)).entries.size).toBe(0);
    expect(await store.beginRebuild(counter, 'next', Date.now() + 10_000, Date.now())).toBe('started');
    expect(await store.finishRebuild(counter, 'failed', '9.00000000')).toBe('lost');
    expect(await store.finishRebuild(counter, 'next', '1.00000000')).toBe('done');
  });

  it('a lapsed lease is taken over: the holder that died can no longer set a base', async () => {
    const counter = fresh();
    expect(await store.beginRebuild(counter, 'dead', Date.now() - 1, Date.now() - 10)).toBe('started');
    await reserve(entry(counter, 'in-dead-lease', '3', '0'));
    expect(await store.beginRebuild(counter, 'alive', Date.now() + 10_000, Date.now())).toBe('started');
    // a new cut: the journal of the lapsed rebuild is not the new one's
    expect(await store.readJournal(counter)).toEqual({ count: '0', entries: new Map() });
    expect(await state(counter)).toMatchObject({ whole: 0n, fraction: 0n });
    expect(await store.finishRebuild(counter, 'dead', '1.00000000')).toBe('lost');
    expect(await store.finishRebuild(counter, 'alive', '2.00000000')).toBe('done');
    expect((await state(counter)).base).toBe('2.00000000');
  });

  it("a lease holds until the instant before its deadline and lapses at it (nowMs is the reader's)", async () => {
    const counter = fresh();
    const deadline = Date.now() + 30_000;
    expect(await store.beginRebuild(counter, 'first', deadline, deadline - 30_000)).toBe('started');
    expect(await store.beginRebuild(counter, 'second', deadline + 30_000, deadline - 1)).toBe('building');
    expect(await store.beginRebuild(counter, 'second', deadline + 30_000, deadline)).toBe('started');
    expect(await store.finishRebuild(counter, 'first', '1.00000000')).toBe('lost');
  });
});

describe('RedisUsageDedupStore: keys that expire', () => {
  it('a counter and its rebuild journal expire after COUNTER_TTL_MS from their first change', async () => {
    const store = new RedisUsageDedupStore(redis, prefix);
    const counter = `${prefix}expiring-counter`;
    const entry = (key: string) => ({
      key: `${counter}:id:${key}`,
      pending: `P|${key}`,
      counter: { key: counter, whole: '1', fraction: '0', field: `e:${key}` },
    });
    const ttlOf = async (key: string) => {
      const ms = await redis.pttl(key);
      // set, and to the counter's lifetime (give or take the test's own milliseconds)
      expect(ms, key).toBeGreaterThan(COUNTER_TTL_MS - 60_000);
      expect(ms, key).toBeLessThanOrEqual(COUNTER_TTL_MS);
    };
    await store.reserve({ bucket: undefined, entries: [entry('first')], ttlSeconds: 60 });
    await ttlOf(counter);
    await redis.del(counter);
    expect(await store.beginRebuild(counter, 'token', Date.now() + 30_000, Date.now())).toBe('started');
    await ttlOf(counter);
    await store.reserve({ bucket: undefined, entries: [entry('during')], ttlSeconds: 60 });
    await ttlOf(`${counter}:j`);
  });

  it("only the lease's own token finishes or abandons it, not one it begins with", async () => {
    const store = new RedisUsageDedupStore(redis, prefix);
    const counter = `${prefix}token-prefix`;
    expect(await store.beginRebuild(counter, 'token-1', Date.now() + 30_000, Date.now())).toBe('started');
    expect(await store.finishRebuild(counter, 'token', '1.00000000')).toBe('lost');
    await store.abandonRebuild(counter, 'token');
    expect((await store.readCounters([counter]))[0]!.lease).toMatch(/^token-1\|/);
    expect(await store.finishRebuild(counter, 'token-1', '1.00000000')).toBe('done');
  });
});
