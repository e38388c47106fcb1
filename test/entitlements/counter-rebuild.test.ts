import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../libs/errors/index.js';
import { connectRedis, type Redis } from '../../libs/redis/index.js';
import { RedisUsageDedupStore, UsageCounter } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { testServices, uniqueName } from '../helpers/services.js';

/*
 * UsageCounter's rebuild on the real Redis store, driven by a clock of the test's own: how long a
 * reader waits for another process's rebuild (30 s), how long its own lease holds (30 s), and what
 * a failed rebuild leaves behind (no lease: the next reader starts at once). Postgres holds no
 * event of these periods, so a rebuild of this process sets base 0. Last, the counter switched off
 * (USAGE_COUNTER=false), which sums the events of organization 7 stored here instead.
 */

const ONE = 10n ** 8n;
let redis: Redis;
let prefix: string;
let database: TestDatabase;

beforeAll(async () => {
  redis = await connectRedis(testServices().redisUrl, 2000);
  prefix = `${uniqueName('rebuild')}:`;
  database = await createTestDatabase('counter_rebuild');
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
  await database.drop();
});

/** The real store, counting its beginRebuild calls: each is one turn of a reader's loop. */
class CountingStore extends RedisUsageDedupStore {
  begins = 0;
  override beginRebuild(key: string, token: string, leaseUntilMs: number, nowMs: number) {
    this.begins++;
    return super.beginRebuild(key, token, leaseUntilMs, nowMs);
  }
  /** Set to evict the counter right after each rebuild set its base (Redis under memory pressure). */
  evictOnFinish = false;
  override async finishRebuild(key: string, token: string, base: string) {
    const finished = await super.finishRebuild(key, token, base);
    if (this.evictOnFinish) await redis.del(key);
    return finished;
  }
}

/** A counter on the real Redis store and this file's Postgres, its item lookups answering none. */
function counterOn(
  store: CountingStore,
  options: Pick<ConstructorParameters<typeof UsageCounter>[0], 'enabled' | 'eventsCaughtUp' | 'now'>,
): UsageCounter {
  return new UsageCounter({
    store,
    db: database.db,
    items: { item: async () => undefined },
    keyPrefix: prefix,
    settleMs: 0,
    ...options,
  });
}

let item = 0;
function setUp(options: { eventsCaughtUp?: (timeoutMs: number) => Promise<boolean> } = {}) {
  const store = new CountingStore(redis, prefix);
  const clock = { ms: Date.now() };
  const counter = counterOn(store, {
    enabled: true,
    eventsCaughtUp: options.eventsCaughtUp ?? (async () => true),
    now: () => clock.ms,
  });
  const period = {
    orgId: 1,
    subscriptionItemId: ++item,
    startMs: Date.UTC(2026, 0, 1),
    endMs: Date.UTC(2026, 1, 1),
  };
  const key = counter.keyOf(period.orgId, period.subscriptionItemId, period.startMs);
  const state = async () => (await store.readCounters([key]))[0]!;
  return { store, clock, counter, period, key, state, t0: clock.ms };
}

/** A promise's outcome as it comes, readable at any time. */
function watch<T>(promise: Promise<T>) {
  const seen: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(seen, { settled: true, value }),
    (error) => Object.assign(seen, { settled: true, error }),
  );
  return seen;
}

/** Waits (bounded) until `done`, or until the reader went round its loop `turns` more times. */
async function untilOrTurns(store: CountingStore, done: () => boolean, turns: number): Promise<void> {
  const until = store.begins + turns;
  const deadline = Date.now() + 10_000;
  while (!done() && store.begins < until) {
    if (Date.now() > deadline) throw new Error('the reader stopped going round its loop');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Reads the set-up's period and moves the clock: the read still waits at exactly 30 s after `t0`, and gives up
 * with 503 one millisecond later.
 */
async function expectGivesUpAfter30s(
  { store, clock, counter, period }: ReturnType<typeof setUp>,
  t0: number,
) {
  const read = watch(counter.used([period]));
  await untilOrTurns(store, () => read.settled, 3);
  clock.ms = t0 + 30_000;
  await untilOrTurns(store, () => read.settled, 3);
  expect(read.settled).toBe(false);
  clock.ms = t0 + 30_001;
  await untilOrTurns(store, () => read.settled, 3);
  expect(read.settled).toBe(true);
  expectUnavailable(read.error);
}

function expectUnavailable(error: unknown): void {
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).code).toBe('SERVICE_UNAVAILABLE');
}

describe('UsageCounter: waiting for another process rebuilding the counter', () => {
  it('waits until 30 s after it began by its clock, still at that instant, and answers 503 the next', async () => {
    const setup = setUp();
    const { store, key, t0 } = setup;
    // another process holds a live lease (ten minutes) and never finishes
    expect(await store.beginRebuild(key, 'other', t0 + 600_000, t0)).toBe('started');
    await expectGivesUpAfter30s(setup, t0);
    // the other's lease is untouched
    expect((await store.readCounters([key]))[0]!.lease).toMatch(/^other\|/);
  });

  it('asks again every 25 ms or so, not in a busy loop', async () => {
    const { store, counter, period, key, t0 } = setUp();
    expect(await store.beginRebuild(key, 'other', t0 + 600_000, t0)).toBe('started');
    const read = watch(counter.used([period]));
    await untilOrTurns(store, () => read.settled, 1);
    const from = store.begins;
    await new Promise((resolve) => setTimeout(resolve, 250));
    // at most one try per 25 ms (a loaded machine makes fewer, never more)
    expect(store.begins - from).toBeLessThanOrEqual(11);
    expect(store.begins - from).toBeGreaterThan(0);
    expect(await store.finishRebuild(key, 'other', '1.00000000')).toBe('done');
    await untilOrTurns(store, () => read.settled, 3);
    expect(read.value).toEqual([ONE]);
  });

  it("answers the other's base as soon as it is set, without a rebuild of its own", async () => {
    const { store, counter, period, key, t0, state } = setUp();
    expect(await store.beginRebuild(key, 'other', t0 + 600_000, t0)).toBe('started');
    const read = watch(counter.used([period]));
    await untilOrTurns(store, () => read.settled, 2);
    expect(read.settled).toBe(false);
    expect(await store.finishRebuild(key, 'other', '4.50000000')).toBe('done');
    await untilOrTurns(store, () => read.settled, 3);
    expect(read.value).toEqual([4n * ONE + ONE / 2n]);
    expect((await state()).base).toBe('4.50000000');
  });

  it("takes over a dead process's lease at its deadline by the reader's clock and rebuilds it", async () => {
    const { store, clock, counter, period, key, t0, state } = setUp();
    expect(await store.beginRebuild(key, 'dead', t0 + 5000, t0)).toBe('started');
    const read = watch(counter.used([period]));
    clock.ms = t0 + 4999;
    await untilOrTurns(store, () => read.settled, 3);
    expect(read.settled).toBe(false);
    clock.ms = t0 + 5000;
    await untilOrTurns(store, () => read.settled, 3);
    expect(read.value).toEqual([0n]);
    expect(await store.finishRebuild(key, 'dead', '9.00000000')).toBe('lost');
    expect((await state()).base).toBe('0.00000000');
  });
});

describe("UsageCounter: this process's own rebuild", () => {
  it('holds its lease for 30 s from its clock: another process takes it over at that instant, not before', async () => {
    let caughtUp!: (value: boolean) => void;
    const gate = new Promise<boolean>((resolve) => {
      caughtUp = resolve;
    });
    const { store, counter, period, key, t0, state } = setUp({ eventsCaughtUp: () => gate });
    const read = watch(counter.used([period]));
    // the cut is made under this reader's lease, which waits for the pg-sink
    let lease: string | null = null;
    for (const stop = Date.now() + 10_000; !lease && !read.settled && Date.now() < stop; ) {
      lease = (await state()).lease;
    }
    expect(Number(lease?.split('|')[1])).toBe(t0 + 30_000);
    expect(await store.beginRebuild(key, 'other', t0 + 90_000, t0 + 29_999)).toBe('building');
    expect(await store.beginRebuild(key, 'other', t0 + 90_000, t0 + 30_000)).toBe('started');
    expect(await store.finishRebuild(key, 'other', '2.00000000')).toBe('done');
    // the first reader's own finish then finds its lease lost, and reads the other's base
    caughtUp(true);
    await untilOrTurns(store, () => read.settled, 3);
    expect(read.value).toEqual([2n * ONE]);
    expect((await state()).base).toBe('2.00000000');
  });

  it('a counter evicted as soon as it is rebuilt is rebuilt again until 30 s by its clock, then 503', async () => {
    const setup = setUp();
    setup.store.evictOnFinish = true;
    await expectGivesUpAfter30s(setup, setup.clock.ms);
  });

  it('a failed rebuild gives its lease up: the next reader, here or elsewhere, rebuilds at once', async () => {
    const answers = [false, true];
    const { store, counter, period, key, t0, state } = setUp({
      eventsCaughtUp: async () => answers.shift()!,
    });
    // the pg-sink did not catch up in time: 503, and no lease left on the counter
    await counter.used([period]).then(
      () => expect.unreachable('the rebuild should have failed'),
      (error) => expectUnavailable(error),
    );
    expect((await state()).lease).toBeNull();
    // another process could begin at once (not 'building' for 30 s): left to this process here
    expect(await store.beginRebuild(key, 'probe', t0 + 30_000, t0)).toBe('started');
    await store.abandonRebuild(key, 'probe');
    // this process's next check starts over (the failed rebuild is not kept) and succeeds
    expect(await counter.used([period])).toEqual([0n]);
    expect(answers).toEqual([]);
    expect((await state()).base).toBe('0.00000000');
  });

  it('a rebuild whose catch-up throws also gives its lease up and answers 503 with the cause', async () => {
    const failure = new Error('pg-sink unreachable');
    const { counter, period, state } = setUp({
      eventsCaughtUp: async () => {
        throw failure;
      },
    });
    const error = await counter.used([period]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expectUnavailable(error);
    expect((error as ApiError).cause).toBe(failure);
    expect((await state()).lease).toBeNull();
  });
});

describe('UsageCounter with USAGE_COUNTER=false (the ingest benchmark baseline)', () => {
  /** A disabled counter over the real Redis store, summing this file's Postgres. */
  function disabled(eventsCaughtUp: (timeoutMs: number) => Promise<boolean>) {
    const store = new CountingStore(redis, prefix);
    return { store, counter: counterOn(store, { enabled: false, eventsCaughtUp }) };
  }
  const store = (item: number, key: string, quantity: string, at: string, voided = false, orgId = 7) =>
    database.db.query(
      `INSERT INTO usage_events (id, org_id, subscription_item_id, idempotency_key, quantity, occurred_at,
         recorded_at, voided_at)
       VALUES (gen_random_uuid(), $6, $1, $2, $3, $4, now(), CASE WHEN $5 THEN now() END)`,
      [item, key, quantity, at, voided, orgId],
    );

  it("sums the period's stored events once the pg-sink caught up, and touches no counter", async () => {
    const stored = 900_000 + ++item * 2;
    const other = stored + 1;
    await store(stored, 'first-instant', '0.1', '2026-03-01T00:00:00Z');
    await store(stored, 'last-ms', '0.20000001', '2026-03-31T23:59:59.999Z');
    await store(stored, 'next-period', '5', '2026-04-01T00:00:00Z');
    await store(stored, 'voided', '7', '2026-03-15T00:00:00Z', true);
    await store(other, 'other-item', '11', '2026-03-15T00:00:00Z');
    // another organization's row under the same item id counts in neither
    await store(stored, 'other-org', '13', '2026-03-15T00:00:00Z', false, 8);
    const waits: number[] = [];
    const { store: counters, counter } = disabled(async (timeoutMs) => {
      waits.push(timeoutMs);
      return true;
    });
    const period = (subscriptionItemId: number) => ({
      orgId: 7,
      subscriptionItemId,
      startMs: Date.UTC(2026, 2, 1),
      endMs: Date.UTC(2026, 3, 1),
    });
    expect(await counter.used([period(stored), period(other)])).toEqual([30_000_001n, 11n * ONE]);
    expect(waits).toEqual([10_000]);
    const counting = await counter.usedCounting([period(stored)], {
      key: `${prefix}bucket:${stored}`,
      limit: 10,
      ttlSeconds: 60,
    });
    expect(counting.allowed).toBe(true);
    expect(await counting.used()).toEqual([30_000_001n]);
    expect(counters.begins).toBe(0);
    expect(await redis.keys(`${prefix}*${stored}*`)).toEqual([`${prefix}bucket:${stored}`]);
  });

  it('answers no items at once, without asking the pg-sink (which is behind here)', async () => {
    const { counter } = disabled(async () => false);
    expect(await counter.used([])).toEqual([]);
    const counting = await counter.usedCounting([], {
      key: `${prefix}bucket:none`,
      limit: 10,
      ttlSeconds: 60,
    });
    expect(counting.allowed).toBe(true);
    expect(await counting.used()).toEqual([]);
  });

  it('answers 503 while the pg-sink is behind, or when asking it fails', async () => {
    const period = {
      orgId: 7,
      subscriptionItemId: 1,
      startMs: Date.UTC(2026, 2, 1),
      endMs: Date.UTC(2026, 3, 1),
    };
    await expect(disabled(async () => false).counter.used([period])).rejects.toSatisfy((error) => {
      expectUnavailable(error);
      return true;
    });
    await expect(
      disabled(async () => {
        throw new Error('the broker is away');
      }).counter.used([period]),
    ).rejects.toSatisfy((error) => {
      expectUnavailable(error);
      return true;
    });
  });
});
