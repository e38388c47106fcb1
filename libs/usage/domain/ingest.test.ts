import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AuthContext } from '../../auth/index.js';
import { ApiError } from '../../errors/index.js';
import { createLogger } from '../../log/index.js';
import { ingestEvents } from '../../observability/index.js';
import { MemoryRateLimitStore, RateLimiter } from '../../rate-limit/index.js';
import { MemoryUsageDedupStore } from '../dedup-store/memory.js';
import type { Reservation } from '../dedup-store/store.js';
import type { UsageEventLog } from '../event-log/log.js';
import { UsageCounter } from './counter.js';
import { dedupKey, type UsageEventRecord } from './event.js';
import { newEventId } from './event-id.js';
import { UsageIngest } from './ingest.js';
import type { ItemLifetime } from './items.js';
import type { ItemSchedule } from './periods.js';

/**
 * A failed log write releases the key and answers 503; a duplicate whose first request failed
 * retries as new once, and a second failure is a 503 (docs/decisions.md, "A failed log write
 * releases the key and answers 503; a repeat then gets a new event"). One process, the memory
 * store, and a log whose appends fail or succeed in a scripted order.
 */
const AUTH: AuthContext = { orgId: 1, keyId: 1, plan: 'beta', rateLimitOverride: null };
const ITEM = { usageType: 'metered' as const };

function scriptedLog(outcomes: ('fail' | 'ok')[]): UsageEventLog & { appended: UsageEventRecord[][] } {
  const appended: UsageEventRecord[][] = [];
  return {
    appended,
    async append(events) {
      const outcome = outcomes[appended.length] ?? 'ok';
      appended.push([...events]);
      // the write takes a while: a repeat arrives while it is in flight
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (outcome === 'fail') throw new Error('broker down');
      return [...events];
    },
    async appendVoids() {},
    checks: () => [],
    async close() {},
  };
}

/** A log as the in-process one: an identity it holds is answered with the event it keeps. */
function keepingLog(): UsageEventLog & { kept: Map<string, UsageEventRecord> } {
  const kept = new Map<string, UsageEventRecord>();
  return {
    kept,
    async append(events) {
      return events.map((event) => {
        const identity = `${event.orgId}:${event.subscriptionItemId}:${event.idempotencyKey}`;
        if (!kept.has(identity)) kept.set(identity, event);
        return kept.get(identity)!;
      });
    },
    async appendVoids() {},
    checks: () => [],
    async close() {},
  };
}

/** The memory store, with a hook run before the nth reservation is made. */
class HookedStore extends MemoryUsageDedupStore {
  reservations = 0;
  hooks = new Map<number, () => Promise<void>>();
  afterReserve: (() => void) | undefined;

  override async reserve(reservation: Reservation) {
    const n = ++this.reservations;
    await this.hooks.get(n)?.();
    const result = await super.reserve(reservation);
    this.afterReserve?.();
    return result;
  }
}

function ingestWith(
  log: UsageEventLog,
  store: MemoryUsageDedupStore,
  options: {
    now?: () => number;
    idempotencyTtlSeconds?: number;
    items?: (subscriptionItemId: number) => ItemLifetime;
    rateLimitStore?: MemoryRateLimitStore;
    logged?: string[];
  } = {},
): UsageIngest {
  const rateLimitStore = options.rateLimitStore ?? new MemoryRateLimitStore();
  const lifetimeOf = options.items ?? (() => ITEM);
  return new UsageIngest({
    store,
    log,
    items: {
      cached: (_orgId, id) => lifetimeOf(id),
      lifetime: async (_orgId, id) => lifetimeOf(id),
      item: async () => undefined,
    },
    rateLimiter: new RateLimiter(rateLimitStore),
    keyPrefix: 'test:',
    idempotencyTtlSeconds: options.idempotencyTtlSeconds ?? 86_400,
    logger: options.logged
      ? createLogger({
          level: 'warn',
          service: 'test',
          destination: { write: (line) => options.logged!.push(line) },
        })
      : createLogger({ level: 'silent', service: 'test' }),
    ...(options.now ? { now: options.now } : {}),
  });
}

const send = (ingest: UsageIngest, quantity: number, idempotencyKey = 'order-1') =>
  ingest.recordEvent(AUTH, {
    body: { subscription_item_id: 7, quantity },
    idempotencyKey,
  });

/** Events the core still holds as on their way to the log: none once every request has its answer. */
const inFlight = (ingest: UsageIngest) =>
  (ingest as unknown as { inFlight: Map<string, unknown> }).inFlight.size;

/** The memory store, its releases taking a while (as a round trip to Redis does). */
class SlowReleaseStore extends MemoryUsageDedupStore {
  override async release(entries: Parameters<MemoryUsageDedupStore['release']>[0]) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    await super.release(entries);
  }
}

/** 201 with the event's quantity, or the error's code. */
async function outcome(reply: ReturnType<typeof send>): Promise<number | string> {
  try {
    return (await reply).value.event.quantity;
  } catch (error) {
    if (error instanceof ApiError) return error.code;
    throw error;
  }
}

describe('a repeat of a request whose log write failed', () => {
  it('is recorded as a new event once the first has failed and released the key', async () => {
    const log = scriptedLog(['fail', 'ok']);
    const ingest = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    const [first, repeat] = await Promise.all([outcome(send(ingest, 1)), outcome(send(ingest, 2))]);
    expect(first).toBe('SERVICE_UNAVAILABLE');
    expect(repeat).toBe(2);
    expect(log.appended.map((events) => events.map((e) => e.quantity))).toEqual([['1'], ['2']]);
    // the key now holds the repeat's event: a third request answers it, and logs no new event
    // (at most that same one again, which the stores absorb)
    const third = await send(ingest, 3);
    expect(third.value.event.quantity).toBe(2);
    // three requests counted: the repeat's retry as new is not a request of its own
    expect(Number(third.headers['X-RateLimit-Limit']) - Number(third.headers['X-RateLimit-Remaining'])).toBe(
      3,
    );
    const repeatId = log.appended[1]![0]!.id;
    const later = log.appended.slice(2).flat();
    expect(later.filter((event) => event.id !== repeatId)).toEqual([]);
  });

  it('answers 503 when its retry as new meets another failed write, instead of retrying again', async () => {
    const log = scriptedLog(['fail', 'fail', 'ok']);
    const store = new HookedStore(new MemoryRateLimitStore());
    const ingest = ingestWith(log, store);
    let third: Promise<number | string> | undefined;
    // The repeat's retry as new (the 3rd reservation) finds a third request's event reserved
    // first, and that one's write fails too.
    store.hooks.set(3, async () => {
      const reserved = new Promise<void>((resolve) => {
        store.afterReserve = resolve;
      });
      third = outcome(send(ingest, 3));
      await reserved;
      store.afterReserve = undefined;
    });
    const [first, repeat] = await Promise.all([outcome(send(ingest, 1)), outcome(send(ingest, 2))]);
    expect(first).toBe('SERVICE_UNAVAILABLE');
    expect(await third).toBe('SERVICE_UNAVAILABLE');
    expect(repeat).toBe('SERVICE_UNAVAILABLE');
    // two writes, both failed: the repeat tried no third one
    expect(log.appended.map((events) => events.map((e) => e.quantity))).toEqual([['1'], ['3']]);
  });
});

describe('a repeat that finds the key changing under it', () => {
  it('follows four records at most, then answers 503 rather than chasing the key forever', async () => {
    /** Every adoption finds yet another pending event there (owners that keep failing and retrying). */
    class ChurningStore extends MemoryUsageDedupStore {
      replaces = 0;
      override async replace(_key: string, expected: string): Promise<string | null> {
        this.replaces++;
        return expected.replace(/^P\|[^|]+/, `P|${randomUUID()}`);
      }
    }
    const store = new ChurningStore(new MemoryRateLimitStore());
    await send(ingestWith(scriptedLog([]), store), 1);
    const log = scriptedLog([]);
    expect(await outcome(send(ingestWith(log, store), 2))).toBe('SERVICE_UNAVAILABLE');
    expect(store.replaces).toBe(4);
    expect(log.appended).toEqual([]);
  });
});

describe('an idempotency store that fails between two steps', () => {
  /** The memory store, whose replace (adopt, then commit) fails at the calls given, counted from 1. */
  class FailingReplaceStore extends MemoryUsageDedupStore {
    replaces = 0;
    failing = new Set<number>();
    override async replace(key: string, expected: string, next: string, ttlSeconds: number) {
      if (this.failing.has(++this.replaces)) throw new Error('store down');
      return super.replace(key, expected, next, ttlSeconds);
    }
  }
  const failure = async (reply: ReturnType<typeof send>) => {
    const error = await reply.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ApiError);
    return { code: (error as ApiError).code, message: (error as ApiError).message };
  };

  it("answers 503 when adopting another process's pending event fails, appending nothing", async () => {
    const store = new FailingReplaceStore(new MemoryRateLimitStore());
    await send(ingestWith(scriptedLog([]), store), 1);
    store.failing.add(1);
    const log = scriptedLog([]);
    expect(await failure(send(ingestWith(log, store), 2))).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      message: 'The idempotency store is unavailable.',
    });
    expect(log.appended).toEqual([]);
  });

  it('answers the adopted event when only its commit fails, logging it; the next repeat completes it', async () => {
    const store = new FailingReplaceStore(new MemoryRateLimitStore());
    const first = await send(ingestWith(scriptedLog([]), store), 1);
    store.failing.add(2); // the commit after the adopted event's append
    const logged: string[] = [];
    const log = scriptedLog([]);
    const adopted = await send(ingestWith(log, store, { logged }), 2);
    expect(adopted.value).toEqual({ event: first.value.event, deduplicated: true });
    expect(log.appended.map((events) => events.map((event) => event.id))).toEqual([[first.value.event.id]]);
    expect(logged.map((line) => JSON.parse(line).msg)).toEqual(['could not commit a usage idempotency key']);
    // still adopted, not committed: a later repeat elsewhere appends it again (the sinks keep it once)
    const later = scriptedLog([]);
    expect((await send(ingestWith(later, store), 3)).value.event).toEqual(first.value.event);
    expect(later.appended.map((events) => events.map((event) => event.id))).toEqual([[first.value.event.id]]);
  });

  it("answers 503 when a repeat with an invalid body cannot read the key's record", async () => {
    class FailingGetStore extends MemoryUsageDedupStore {
      override async get(): Promise<string | null> {
        throw new Error('store down');
      }
    }
    const ingest = ingestWith(scriptedLog([]), new FailingGetStore(new MemoryRateLimitStore()));
    const invalid = ingest.recordEvent(AUTH, {
      body: { subscription_item_id: 7, quantity: 'lots' },
      idempotencyKey: 'order-1',
    });
    expect(await failure(invalid)).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      message: 'The idempotency store is unavailable.',
    });
  });

  it('answers the failed write with 503 when releasing its key fails too, logging the release', async () => {
    class FailingReleaseStore extends MemoryUsageDedupStore {
      override async release(): Promise<void> {
        throw new Error('store down');
      }
    }
    const logged: string[] = [];
    const ingest = ingestWith(scriptedLog(['fail']), new FailingReleaseStore(new MemoryRateLimitStore()), {
      logged,
    });
    expect(await failure(send(ingest, 1))).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      message: 'The usage log is unavailable.',
    });
    expect(logged.map((line) => JSON.parse(line).msg)).toEqual(['could not release usage idempotency keys']);
  });
});

describe('a refused request whose count the rate-limit store cannot take', () => {
  it("answers 503 naming the store, not the body's 422", async () => {
    class DownRateLimitStore extends MemoryRateLimitStore {
      override async consume(): Promise<{ count: number; allowed: boolean }> {
        throw new Error('store down');
      }
    }
    const ingest = ingestWith(scriptedLog([]), new MemoryUsageDedupStore(new MemoryRateLimitStore()), {
      rateLimitStore: new DownRateLimitStore(),
    });
    const invalid = ingest.recordEvent(AUTH, { body: { quantity: 1 }, idempotencyKey: undefined });
    await expect(invalid).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      message: 'The rate-limit store is unavailable.',
    });
  });
});

describe('a failed log write releases the key before the 503', () => {
  it('so a retry sent once the 503 came is a new event, however long the release takes', async () => {
    const log = scriptedLog(['fail', 'ok']);
    const ingest = ingestWith(log, new SlowReleaseStore(new MemoryRateLimitStore()));
    expect(await outcome(send(ingest, 1))).toBe('SERVICE_UNAVAILABLE');
    expect(await outcome(send(ingest, 2))).toBe(2);
    expect(log.appended.map((events) => events.map((e) => e.quantity))).toEqual([['1'], ['2']]);
  });

  it('so a repeat waiting in this process hears of the failure only once the key is free', async () => {
    const log = scriptedLog(['fail', 'ok']);
    const ingest = ingestWith(log, new SlowReleaseStore(new MemoryRateLimitStore()));
    const [first, repeat] = await Promise.all([outcome(send(ingest, 1)), outcome(send(ingest, 2))]);
    expect(first).toBe('SERVICE_UNAVAILABLE');
    // not the failed event adopted from a key still pending: a new one
    expect(repeat).toBe(2);
    expect(log.appended.map((events) => events.map((e) => e.quantity))).toEqual([['1'], ['2']]);
  });
});

describe('an identity across processes and over time', () => {
  it('is adopted once by another process, appended once there, then answered from the store', async () => {
    const store = new MemoryUsageDedupStore(new MemoryRateLimitStore());
    const [logA, logB, logC] = [scriptedLog([]), scriptedLog([]), scriptedLog([])];
    const first = await send(ingestWith(logA, store), 1);
    // process A's record stays pending (nothing is written on the log's acknowledgement)
    const b = ingestWith(logB, store);
    const repeats = await Promise.all([send(b, 2), send(b, 3)]);
    for (const repeat of repeats)
      expect(repeat.value).toEqual({ event: first.value.event, deduplicated: true });
    // the two repeats in B: one adopts and appends the event, the other waits for it
    expect(logB.appended.map((events) => events.map((e) => e.id))).toEqual([[first.value.event.id]]);
    // committed by B: a third process answers from the store, appending nothing
    const third = await send(ingestWith(logC, store), 4);
    expect(third.value).toEqual({ event: first.value.event, deduplicated: true });
    expect(logC.appended).toEqual([]);
  });

  it('is a repeat when the log already holds it though the store forgot it (a restart)', async () => {
    const log = keepingLog();
    const first = await send(ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore())), 1);
    expect(first.value.deduplicated).toBe(false);
    const restarted = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    expect((await send(restarted, 2)).value).toEqual({ event: first.value.event, deduplicated: true });
    // repeats in a restarted process that wait for the one appending all get the event the log held
    const waited = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    const together = await Promise.all([send(waited, 5), send(waited, 6), send(waited, 7)]);
    for (const reply of together) expect(reply.value.event).toEqual(first.value.event);
    // a repeat whose body is invalid is answered from the log too, whatever the new body says
    log.stored = async ({ orgId, subscriptionItemId, idempotencyKey }) =>
      log.kept.get(`${orgId}:${subscriptionItemId}:${idempotencyKey}`) ?? null;
    const forgotten = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    expect((await send(forgotten, -1)).value).toEqual({ event: first.value.event, deduplicated: true });
    expect(await outcome(send(forgotten, -1, 'never-recorded'))).toBe('VALIDATION_ERROR');
  });

  it('in one process, is appended once however many repeats wait for it', async () => {
    const log = scriptedLog([]);
    const ingest = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    const replies = await Promise.all([send(ingest, 1), send(ingest, 2), send(ingest, 3)]);
    expect(replies.map((reply) => reply.value.event.quantity)).toEqual([1, 1, 1]);
    expect(replies.map((reply) => reply.value.deduplicated)).toEqual([false, true, true]);
    expect(log.appended).toHaveLength(1);
    // nothing left behind in flight (a repeat's own candidate included)
    expect(inFlight(ingest)).toBe(0);
  });

  it('once adopted, stays for a whole ttl even if the adopter failed to append it: a retry completes it', async () => {
    let now = Date.UTC(2026, 10, 20, 12);
    const clock = () => now;
    const store = new MemoryUsageDedupStore(new MemoryRateLimitStore(), clock);
    const options = { now: clock, idempotencyTtlSeconds: 3600 };
    const first = await send(ingestWith(scriptedLog([]), store, options), 1);
    // another process adopts the pending event, and its own append fails: the key is not released
    expect(await outcome(send(ingestWith(scriptedLog(['fail']), store, options), 2))).toBe(
      'SERVICE_UNAVAILABLE',
    );
    now += 3_600_000 - 1;
    const log = scriptedLog([]);
    const retry = await send(ingestWith(log, store, options), 3);
    expect(retry.value).toEqual({ event: first.value.event, deduplicated: true });
    expect(log.appended.map((events) => events.map((e) => e.id))).toEqual([[first.value.event.id]]);
  });

  it('holds its event for the idempotency ttl (renewed by an adoption), and is new from its end on', async () => {
    const start = Date.UTC(2026, 10, 20, 12);
    let now = start;
    const clock = () => now;
    const ttlMs = 3_600_000;
    const store = new MemoryUsageDedupStore(new MemoryRateLimitStore(), clock);
    const ingest = ingestWith(scriptedLog([]), store, { now: clock, idempotencyTtlSeconds: 3600 });
    const kept = await send(ingest, 1, 'kept');
    const expiring = await send(ingest, 1, 'expiring');
    now = start + ttlMs - 1;
    // the last millisecond of the ttl: the stored event (adopted and committed, for a new ttl)
    expect((await send(ingest, 2, 'kept')).value).toEqual({ event: kept.value.event, deduplicated: true });
    now = start + ttlMs;
    const after = await send(ingest, 3, 'expiring');
    expect(after.value.deduplicated).toBe(false);
    expect(after.value.event.quantity).toBe(3);
    expect(after.value.event.id).not.toBe(expiring.value.event.id);
    now = start + 2 * ttlMs - 2;
    expect((await send(ingest, 4, 'kept')).value.event).toEqual(kept.value.event);
  });

  it('is recorded at its receipt, whatever timestamp it carries', async () => {
    const receivedAtMs = Date.UTC(2026, 10, 20, 12, 0, 0, 250);
    const ingest = ingestWith(scriptedLog([]), new MemoryUsageDedupStore(new MemoryRateLimitStore()), {
      now: () => receivedAtMs,
    });
    const reply = await ingest.recordEvent(AUTH, {
      body: { subscription_item_id: 7, quantity: 1, timestamp: '2026-11-19T08:00:00Z' },
      idempotencyKey: 'dated',
    });
    expect(reply.value.event).toMatchObject({
      timestamp: '2026-11-19T08:00:00.000Z',
      recorded_at: '2026-11-20T12:00:00.250Z',
    });
    // its id carries the receipt too (its first 48 bits), so ids sort in the order events came in
    // (docs/decisions.md, "Usage event ids carry their time")
    expect(reply.value.event.id.slice(0, 13)).toBe(newEventId(receivedAtMs).slice(0, 13));
    const batch = await ingest.recordBatch(AUTH, {
      events: [{ subscription_item_id: 7, quantity: 1, idempotency_key: 'batched' }],
    });
    expect(batch.value[0]).toEqual({
      event: expect.objectContaining({ recorded_at: '2026-11-20T12:00:00.250Z' }),
    });
  });
});

describe('an identity of another organization', () => {
  it('is its own event: the same item and key in two organizations are recorded twice, each under its organization', async () => {
    const log = scriptedLog([]);
    const ingest = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    const body = { subscription_item_id: 7, quantity: 1 };
    const first = await ingest.recordEvent(AUTH, { body, idempotencyKey: 'shared' });
    const other = await ingest.recordEvent({ ...AUTH, orgId: 2 }, { body, idempotencyKey: 'shared' });
    expect(first.value.deduplicated).toBe(false);
    expect(other.value.deduplicated).toBe(false);
    expect(other.value.event.id).not.toBe(first.value.event.id);
    expect(log.appended.flat().map((event) => event.orgId)).toEqual([1, 2]);
    const batch = await ingest.recordBatch(
      { ...AUTH, orgId: 3 },
      { events: [{ ...body, idempotency_key: 'shared' }] },
    );
    expect(batch.value[0]).toEqual({ event: expect.objectContaining({ quantity: 1 }) });
    expect(log.appended.flat().map((event) => event.orgId)).toEqual([1, 2, 3]);
  });
});

/** The error an ingest call threw (fails the test if it answered). */
async function refusal(reply: Promise<unknown>): Promise<ApiError> {
  try {
    await reply;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected a refusal, got an answer');
}

describe("an event's item and its lifetime", () => {
  const STARTED = Date.UTC(2026, 10, 1);
  const REMOVED = Date.UTC(2026, 10, 15);
  const ITEMS: Record<number, ItemLifetime> = {
    7: { usageType: 'metered', startedAtMs: STARTED, removedAtMs: REMOVED },
    8: { usageType: 'licensed' },
    9: { usageType: undefined },
  };
  const ingest = () =>
    ingestWith(scriptedLog([]), new MemoryUsageDedupStore(new MemoryRateLimitStore()), {
      items: (id) => ITEMS[id] ?? { usageType: undefined },
    });
  const at = (ms: number, subscription_item_id = 7) =>
    ingest().recordEvent(AUTH, {
      body: { subscription_item_id, quantity: 1, timestamp: new Date(ms).toISOString() },
      idempotencyKey: `at-${ms}`,
    });

  it('takes usage from the exact instant the item started, and refuses the instant before on timestamp', async () => {
    expect((await at(STARTED)).value.event.timestamp).toBe(new Date(STARTED).toISOString());
    const early = await refusal(at(STARTED - 1));
    expect(early.code).toBe('VALIDATION_ERROR');
    expect(early.details).toEqual([expect.objectContaining({ field: 'timestamp', code: 'out_of_range' })]);
  });

  it('refuses usage at exactly the removal on timestamp, and takes the instant before', async () => {
    expect((await at(REMOVED - 1)).value.deduplicated).toBe(false);
    const removed = await refusal(at(REMOVED));
    expect(removed.code).toBe('VALIDATION_ERROR');
    expect(removed.details).toEqual([expect.objectContaining({ field: 'timestamp', code: 'out_of_range' })]);
  });

  it('answers 400 for an item that is not metered, and 404 for an unknown one', async () => {
    expect((await refusal(at(STARTED, 8))).code).toBe('BAD_REQUEST');
    expect((await refusal(at(STARTED, 9))).code).toBe('NOT_FOUND');
  });

  it('answers a recorded key the stored event despite a timestamp outside the lifetime, but not once the item is unknown or not metered', async () => {
    let lifetime: ItemLifetime = ITEMS[7]!;
    const core = ingestWith(scriptedLog([]), new MemoryUsageDedupStore(new MemoryRateLimitStore()), {
      items: () => lifetime,
    });
    const repeat = (ms: number) =>
      core.recordEvent(AUTH, {
        body: { subscription_item_id: 7, quantity: 1, timestamp: new Date(ms).toISOString() },
        idempotencyKey: 'recorded',
      });
    const stored = (await repeat(STARTED)).value.event;
    // a 422 of the body (its timestamp): the stored event, whatever the new body says
    expect((await repeat(STARTED - 1)).value).toEqual({ event: stored, deduplicated: true });
    lifetime = { usageType: undefined };
    expect((await refusal(repeat(STARTED))).code).toBe('NOT_FOUND');
    lifetime = { usageType: 'licensed' };
    expect((await refusal(repeat(STARTED))).code).toBe('BAD_REQUEST');
  });

  it('answers each event of a batch in request order, its refusal or its stored event', async () => {
    const log = scriptedLog([]);
    const core = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()), {
      items: (id) => ITEMS[id] ?? { usageType: undefined },
    });
    const event = (subscription_item_id: number, ms: number, key: string) => ({
      subscription_item_id,
      quantity: ms === STARTED ? 2 : 1,
      timestamp: new Date(ms).toISOString(),
      idempotency_key: key,
    });
    const reply = await core.recordBatch(AUTH, {
      events: [
        event(8, STARTED, 'licensed'),
        event(7, REMOVED, 'removed'),
        { subscription_item_id: 7, quantity: -1, idempotency_key: 'negative' },
        event(7, STARTED, 'first'),
        event(9, STARTED, 'unknown'),
        event(7, REMOVED - 1, 'last'),
      ],
    });
    const codes = reply.value.map((outcome) =>
      'error' in outcome ? outcome.error.code : outcome.event.quantity,
    );
    expect(codes).toEqual(['BAD_REQUEST', 'VALIDATION_ERROR', 'VALIDATION_ERROR', 2, 'NOT_FOUND', 1]);
    expect(log.appended.flat().map((e) => e.idempotencyKey)).toEqual(['first', 'last']);
  });
});

describe('a request over its hourly limit', () => {
  const limited: AuthContext = { ...AUTH, rateLimitOverride: 2 };

  it('is refused with 429 and its headers, and its event is neither logged nor kept under its key', async () => {
    const log = scriptedLog([]);
    // one store of buckets: the reservation counts in the one the limiter reads
    const rateLimitStore = new MemoryRateLimitStore();
    const store = new MemoryUsageDedupStore(rateLimitStore);
    const ingest = ingestWith(log, store, { rateLimitStore });
    const post = (key: string, quantity = 1) =>
      ingest.recordEvent(limited, { body: { subscription_item_id: 7, quantity }, idempotencyKey: key });
    await post('a');
    // an invalid body counts too
    expect((await refusal(post('b', -1))).code).toBe('VALIDATION_ERROR');
    const over = await refusal(post('c'));
    expect(over.code).toBe('RATE_LIMITED');
    expect(over.headers).toMatchObject({ 'X-RateLimit-Limit': '2', 'X-RateLimit-Remaining': '0' });
    expect(log.appended.flat().map((e) => e.idempotencyKey)).toEqual(['a']);
    expect(await store.get(dedupKey('test:', 1, 7, 'c'))).toBeNull();
    expect(inFlight(ingest)).toBe(0);
    // over the limit, an invalid body is a 429 too, not its 422, with the same headers
    const invalidOver = await refusal(post('d', -1));
    expect(invalidOver.code).toBe('RATE_LIMITED');
    expect(invalidOver.headers).toMatchObject({ 'X-RateLimit-Limit': '2', 'X-RateLimit-Remaining': '0' });
    const batchOver = await refusal(ingest.recordBatch(limited, { events: [{ quantity: -1 }] }));
    expect(batchOver.code).toBe('RATE_LIMITED');
    expect(batchOver.headers).toMatchObject({ 'X-RateLimit-Limit': '2', 'X-RateLimit-Remaining': '0' });
  });
});

describe('the ingest outcome counts', () => {
  const counts = () => ({
    accepted: ingestEvents.labels('accepted', '').value,
    deduplicated: ingestEvents.labels('deduplicated', '').value,
    invalid: ingestEvents.labels('rejected', 'VALIDATION_ERROR').value,
  });

  it('count a new event as accepted and its repeat as deduplicated, one by one and in a batch', async () => {
    const ingest = ingestWith(scriptedLog([]), new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    const before = counts();
    await send(ingest, 1, 'counted');
    await send(ingest, 1, 'counted');
    expect(counts()).toEqual({
      ...before,
      accepted: before.accepted + 1,
      deduplicated: before.deduplicated + 1,
    });
    // a batch of a repeat, two new events and an invalid one
    await ingest.recordBatch(AUTH, {
      events: [
        { subscription_item_id: 7, quantity: 1, idempotency_key: 'counted' },
        { subscription_item_id: 7, quantity: 1, idempotency_key: 'batched-1' },
        { subscription_item_id: 7, quantity: -1, idempotency_key: 'batched-bad' },
        { subscription_item_id: 7, quantity: 1, idempotency_key: 'batched-2' },
      ],
    });
    expect(counts()).toEqual({
      accepted: before.accepted + 3,
      deduplicated: before.deduplicated + 2,
      invalid: before.invalid + 1,
    });
  });

  it('count a repeat whose body is invalid as deduplicated, since it is answered the stored event', async () => {
    const ingest = ingestWith(scriptedLog([]), new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    await send(ingest, 1, 'stored-then-invalid');
    const before = counts();
    const reply = await send(ingest, -1, 'stored-then-invalid');
    expect(reply.value.deduplicated).toBe(true);
    expect(counts()).toEqual({ ...before, deduplicated: before.deduplicated + 1 });
  });

  it('count an event of a batch refused for its item under its refusal code', async () => {
    const refused = (code: string) => ingestEvents.labels('rejected', code).value;
    const before = ['BAD_REQUEST', 'NOT_FOUND', 'VALIDATION_ERROR'].map(refused);
    const items: Record<number, ItemLifetime> = {
      7: { usageType: 'metered', startedAtMs: Date.UTC(2026, 10, 1) },
      8: { usageType: 'licensed' },
    };
    const ingest = ingestWith(scriptedLog([]), new MemoryUsageDedupStore(new MemoryRateLimitStore()), {
      items: (id) => items[id] ?? { usageType: undefined },
    });
    await ingest.recordBatch(AUTH, {
      events: [
        { subscription_item_id: 8, quantity: 1, idempotency_key: 'licensed' },
        { subscription_item_id: 9, quantity: 1, idempotency_key: 'unknown' },
        { subscription_item_id: 9, quantity: 1, idempotency_key: 'unknown-2' },
        { subscription_item_id: 7, quantity: 1, timestamp: '2026-10-31T23:59:59Z', idempotency_key: 'early' },
        { subscription_item_id: 7, quantity: 1, idempotency_key: 'counted-new' },
      ],
    });
    expect(['BAD_REQUEST', 'NOT_FOUND', 'VALIDATION_ERROR'].map(refused)).toEqual([
      before[0]! + 1,
      before[1]! + 2,
      before[2]! + 1,
    ]);
  });
});

describe('a batch whose items cannot be looked up', () => {
  it('is refused whole with 503, logging none of its events', async () => {
    const log = scriptedLog([]);
    const ingest = new UsageIngest({
      store: new MemoryUsageDedupStore(new MemoryRateLimitStore()),
      log,
      items: {
        // 7 is known; 8 must be read, and the database is down
        cached: (_orgId, id) => (id === 7 ? ITEM : undefined),
        lifetime: async () => {
          throw new Error('database down');
        },
        item: async () => undefined,
      },
      rateLimiter: new RateLimiter(new MemoryRateLimitStore()),
      keyPrefix: 'test:',
      idempotencyTtlSeconds: 86_400,
      logger: createLogger({ level: 'silent', service: 'test' }),
    });
    const reply = ingest.recordBatch(AUTH, {
      events: [
        { subscription_item_id: 7, quantity: 1, idempotency_key: 'known' },
        { subscription_item_id: 8, quantity: 1, idempotency_key: 'unread' },
      ],
    });
    const error = await refusal(reply);
    expect(error.code).toBe('SERVICE_UNAVAILABLE');
    expect(error.headers).toHaveProperty('X-RateLimit-Limit');
    expect(log.appended).toEqual([]);
  });
});

describe('a batch after a restart', () => {
  it('counts an event the log already held as deduplicated, beside a repeat the store knows', async () => {
    const log = keepingLog();
    const before = await send(
      ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore())),
      1,
      'held',
    );
    // restarted: the store forgot 'held'; 'again' is recorded anew, then repeated in the batch
    const restarted = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    await send(restarted, 1, 'again');
    const deduplicated = ingestEvents.labels('deduplicated', '');
    const accepted = ingestEvents.labels('accepted', '');
    const [dedupedBefore, acceptedBefore] = [deduplicated.value, accepted.value];
    const reply = await restarted.recordBatch(AUTH, {
      events: [
        { subscription_item_id: 7, quantity: 2, idempotency_key: 'again' },
        { subscription_item_id: 7, quantity: 2, idempotency_key: 'held' },
      ],
    });
    expect(reply.value[1]).toEqual({ event: before.value.event });
    expect(deduplicated.value - dedupedBefore).toBe(2);
    expect(accepted.value - acceptedBefore).toBe(0);
  });
});

describe('every refusal of a counted request carries the rate-limit headers', () => {
  it('a 503 of a failed log write, for one event and for a batch holding a repeat', async () => {
    const log = scriptedLog(['ok', 'fail', 'fail']);
    const ingest = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    await send(ingest, 1, 'kept');
    const unavailable = ingestEvents.labels('rejected', 'SERVICE_UNAVAILABLE');
    const before = unavailable.value;
    const single = await refusal(send(ingest, 1, 'lost'));
    expect(single.code).toBe('SERVICE_UNAVAILABLE');
    expect(single.headers).toHaveProperty('X-RateLimit-Remaining');
    // beside its own Retry-After of one second (docs/decisions.md, "A dependency that is down is a
    // 503 with Retry-After: 1"), and still an outage by design, not logged per request as a failure
    expect(single.headers).toMatchObject({ 'Retry-After': '1' });
    expect(single.expected).toBe(true);
    const batch = await refusal(
      ingest.recordBatch(AUTH, {
        events: [
          { subscription_item_id: 7, quantity: 1, idempotency_key: 'kept' },
          { subscription_item_id: 7, quantity: 1, idempotency_key: 'lost' },
        ],
      }),
    );
    expect(batch.code).toBe('SERVICE_UNAVAILABLE');
    expect(batch.headers).toHaveProperty('X-RateLimit-Remaining');
    expect(batch.headers).toMatchObject({ 'Retry-After': '1' });
    expect(batch.expected).toBe(true);
    // each event of a failed request is counted as refused: one, then the batch's two
    expect(unavailable.value - before).toBe(3);
  });

  it("an invalid body's 422 when its key names nothing recorded, and a 503 when the log cannot tell", async () => {
    const log = scriptedLog([]);
    log.stored = async () => {
      throw new Error('database down');
    };
    const ingest = ingestWith(log, new MemoryUsageDedupStore(new MemoryRateLimitStore()));
    const unavailable = ingestEvents.labels('rejected', 'SERVICE_UNAVAILABLE');
    const refused = ingestEvents.labels('rejected', 'VALIDATION_ERROR');
    const before = { unavailable: unavailable.value, refused: refused.value };
    const unknown = await refusal(send(ingest, -1, 'never-recorded'));
    expect(unknown.code).toBe('SERVICE_UNAVAILABLE');
    // it names what is down: the database the log reads
    expect(unknown.message).toBe('The database is unavailable.');
    expect(unknown.headers).toHaveProperty('X-RateLimit-Remaining');
    log.stored = async () => null;
    const invalid = await refusal(send(ingest, -1, 'never-recorded'));
    expect(invalid.code).toBe('VALIDATION_ERROR');
    expect(invalid.details).toEqual([expect.objectContaining({ field: 'quantity' })]);
    expect(invalid.headers).toHaveProperty('X-RateLimit-Remaining');
    // each counted once, as what it was answered
    expect({ unavailable: unavailable.value, refused: refused.value }).toEqual({
      unavailable: before.unavailable + 1,
      refused: before.refused + 1,
    });
  });
});

describe('a request whose reservation the store refuses', () => {
  it('answers 503, leaves nothing in flight, and its retry is recorded once', async () => {
    class DownStore extends MemoryUsageDedupStore {
      down = true;
      override async reserve(reservation: Reservation) {
        if (this.down) throw new Error('redis down');
        return super.reserve(reservation);
      }
    }
    const log = scriptedLog([]);
    const store = new DownStore(new MemoryRateLimitStore());
    const ingest = ingestWith(log, store);
    expect(await outcome(send(ingest, 1))).toBe('SERVICE_UNAVAILABLE');
    expect(inFlight(ingest)).toBe(0);
    expect(log.appended).toEqual([]);
    store.down = false;
    const retry = await send(ingest, 1);
    expect(retry.value.deduplicated).toBe(false);
    expect((await send(ingest, 1)).value.event).toEqual(retry.value.event);
    // one event (a repeat may append that same one again; the sinks keep one row per identity)
    expect(new Set(log.appended.flat().map((event) => event.id))).toEqual(new Set([retry.value.event.id]));
  });
});

describe('the item check', () => {
  /** An ingest whose item cache knows item 7 only; the items it asks the database about, in order. */
  function ingestWithItem7Cached() {
    const lookedUp: number[] = [];
    const ingest = new UsageIngest({
      store: new MemoryUsageDedupStore(new MemoryRateLimitStore()),
      log: scriptedLog([]),
      items: {
        cached: (_orgId, id) => (id === 7 ? ITEM : undefined),
        lifetime: async (_orgId, id) => {
          lookedUp.push(id);
          return ITEM;
        },
        item: async () => undefined,
      },
      rateLimiter: new RateLimiter(new MemoryRateLimitStore()),
      keyPrefix: 'test:',
      idempotencyTtlSeconds: 86_400,
      logger: createLogger({ level: 'silent', service: 'test' }),
    });
    return { ingest, lookedUp };
  }

  it('asks the database only about items the cache does not know', async () => {
    const { ingest, lookedUp } = ingestWithItem7Cached();
    await send(ingest, 1, 'cached');
    await ingest.recordEvent(AUTH, {
      body: { subscription_item_id: 8, quantity: 1 },
      idempotencyKey: 'read',
    });
    expect(lookedUp).toEqual([8]);
  });
  it('asks the database only about the items of a batch the cache does not know', async () => {
    const { ingest, lookedUp } = ingestWithItem7Cached();
    const reply = await ingest.recordBatch(AUTH, {
      events: [
        { subscription_item_id: 7, quantity: 1, idempotency_key: 'cached' },
        { subscription_item_id: 8, quantity: 2, idempotency_key: 'read' },
        { subscription_item_id: 7, quantity: 3, idempotency_key: 'cached-2' },
      ],
    });
    expect(reply.value.map((outcome) => ('event' in outcome ? outcome.event.quantity : undefined))).toEqual([
      1, 2, 3,
    ]);
    expect(lookedUp).toEqual([8]);
  });
});

describe('the period counter of a new event', () => {
  /** Items 7 and 8 each get an event of 5; their November counters, as the store holds them. */
  async function countersAfterAnEventEach(options: { enabled: boolean }) {
    const store = new MemoryUsageDedupStore(new MemoryRateLimitStore());
    const schedule: ItemSchedule = {
      startDateMs: Date.UTC(2026, 10, 1),
      billingPeriod: 'monthly',
      anchorDay: 1,
      currentPeriodStartMs: Date.UTC(2026, 10, 1),
      currentPeriodEndMs: Date.UTC(2026, 11, 1),
    };
    const counter = new UsageCounter({
      store,
      db: undefined as never,
      items: { item: async () => undefined },
      keyPrefix: 'test:',
      enabled: options.enabled,
      eventsCaughtUp: async () => true,
      settleMs: 0,
    });
    const ingest = new UsageIngest({
      store,
      log: scriptedLog([]),
      // item 7's schedule is cached; item 8's was evicted and is read again
      items: {
        cached: (_orgId, id) => (id === 7 ? { ...ITEM, schedule } : ITEM),
        lifetime: async () => ITEM,
        item: async () => ({ schedule }) as never,
      },
      counter,
      rateLimiter: new RateLimiter(new MemoryRateLimitStore()),
      keyPrefix: 'test:',
      idempotencyTtlSeconds: 86_400,
      logger: createLogger({ level: 'silent', service: 'test' }),
    });
    for (const subscription_item_id of [7, 8]) {
      await ingest.recordEvent(AUTH, {
        body: { subscription_item_id, quantity: 5, timestamp: '2026-11-20T00:00:00Z' },
        idempotencyKey: 'counted',
      });
    }
    return store.readCounters([
      counter.keyOf(1, 7, Date.UTC(2026, 10, 1)),
      counter.keyOf(1, 8, Date.UTC(2026, 10, 1)),
    ]);
  }

  it("counts it in its item's period, the schedule read again when the cache no longer holds it", async () => {
    const states = await countersAfterAnEventEach({ enabled: true });
    expect(states.map((state) => state?.whole)).toEqual([5n, 5n]);
  });

  it('counts it nowhere when the counters are off (USAGE_COUNTER=false)', async () => {
    const states = await countersAfterAnEventEach({ enabled: false });
    expect(states.map((state) => state?.whole ?? 0n)).toEqual([0n, 0n]);
  });
});
