import { describe, expect, it } from 'vitest';
import type { AuthContext } from '../../auth/index.js';
import { ApiError } from '../../errors/index.js';
import { createLogger } from '../../log/index.js';
import { MemoryRateLimitStore, RateLimiter } from '../../rate-limit/index.js';
import { MemoryUsageDedupStore } from '../dedup-store/memory.js';
import type { Reservation } from '../dedup-store/store.js';
import type { UsageEventLog } from '../event-log/log.js';
import type { UsageEventRecord } from './event.js';
import { UsageIngest } from './ingest.js';

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

function ingestWith(log: UsageEventLog, store: MemoryUsageDedupStore): UsageIngest {
  const rateLimitStore = new MemoryRateLimitStore();
  return new UsageIngest({
    store,
    log,
    items: {
      cached: () => ITEM,
      lifetime: async () => ITEM,
      item: async () => undefined,
    },
    rateLimiter: new RateLimiter(rateLimitStore),
    keyPrefix: 'test:',
    idempotencyTtlSeconds: 86_400,
    logger: createLogger({ level: 'silent', service: 'test' }),
  });
}

const send = (ingest: UsageIngest, quantity: number) =>
  ingest.recordEvent(AUTH, {
    body: { subscription_item_id: 7, quantity },
    idempotencyKey: 'order-1',
  });

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
    expect(await outcome(send(ingest, 3))).toBe(2);
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
