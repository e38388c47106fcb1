import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../rate-limit/index.js';
import { MemoryUsageDedupStore } from './memory.js';

/**
 * The embedded mode's idempotency records live for IDEMPOTENCY_TTL_DAYS, as Redis keeps them
 * (docs/decisions.md, "Usage idempotency: one `SET NX` per new event"): a retry within the ttl
 * answers the stored event, one after it is a new event. test/usage/redis-store.test.ts holds the
 * two stores to one contract but cannot move Redis' clock; this one moves the memory store's.
 */
const DAY_MS = 86_400_000;
const TTL_SECONDS = 30 * 86_400;
const OURS = 'P|11111111-1111-4111-8111-111111111111|1|0|0';
const THEIRS = 'P|33333333-3333-4333-8333-333333333333|5|0|0';
const KEY = 'usage:1:2:order-1';

function clockedStore(): { store: MemoryUsageDedupStore; advance(ms: number): void } {
  let now = Date.UTC(2026, 10, 1);
  const clock = () => now;
  return {
    store: new MemoryUsageDedupStore(new MemoryRateLimitStore(clock), clock),
    advance: (ms) => {
      now += ms;
    },
  };
}

const reserve = (store: MemoryUsageDedupStore, pending: string, ttlSeconds = TTL_SECONDS) =>
  store.reserve({ bucket: undefined, entries: [{ key: KEY, pending }], ttlSeconds });

describe('the memory dedup store over time', () => {
  it('keeps a reservation for its whole ttl, in seconds, and frees the identity after it', async () => {
    const { store, advance } = clockedStore();
    expect((await reserve(store, OURS)).existing).toEqual([null]);
    advance(30 * DAY_MS - 1000);
    expect(await store.get(KEY)).toBe(OURS);
    expect((await reserve(store, THEIRS)).existing).toEqual([OURS]);
    advance(2000);
    expect(await store.get(KEY)).toBeNull();
    // a repeat after the ttl is a new event
    expect((await reserve(store, THEIRS)).existing).toEqual([null]);
    expect(await store.get(KEY)).toBe(THEIRS);
  });

  it('gives an adopted record a whole ttl from its adoption, and a committed one from its commit', async () => {
    const { store, advance } = clockedStore();
    // reserved for a minute, as an earlier version did
    await reserve(store, OURS, 60);
    advance(30_000);
    const adopted = `A${OURS.slice(1)}`;
    expect(await store.replace(KEY, OURS, adopted, TTL_SECONDS)).toBe(adopted);
    advance(29 * DAY_MS);
    expect(await store.get(KEY)).toBe(adopted);
    const committed = `C${OURS.slice(1)}`;
    expect(await store.replace(KEY, adopted, committed, TTL_SECONDS)).toBe(committed);
    advance(29 * DAY_MS);
    expect(await store.get(KEY)).toBe(committed);
    advance(2 * DAY_MS);
    expect(await store.get(KEY)).toBeNull();
  });

  it('neither adopts nor releases an expired record', async () => {
    const { store, advance } = clockedStore();
    await reserve(store, OURS, 60);
    advance(61_000);
    expect(await store.replace(KEY, OURS, `A${OURS.slice(1)}`, TTL_SECONDS)).toBeNull();
    expect(await store.get(KEY)).toBeNull();
    await reserve(store, THEIRS);
    await store.release([{ key: KEY, pending: OURS }]);
    expect(await store.get(KEY)).toBe(THEIRS);
  });

  it('frees the identity at the very instant its ttl ends, as Redis expires a key', async () => {
    const { store, advance } = clockedStore();
    await reserve(store, OURS, 90);
    advance(89_999);
    expect(await store.get(KEY)).toBe(OURS);
    advance(1);
    expect(await store.get(KEY)).toBeNull();
    await reserve(store, OURS, 90);
    advance(90_000);
    expect((await reserve(store, THEIRS)).existing).toEqual([null]);
  });

  it("lets another reader take a rebuild over at the very instant the holder's lease lapses", async () => {
    const { store } = clockedStore();
    const counter = 'usage:counter:1:2:0';
    const deadline = Date.UTC(2026, 10, 1, 0, 0, 30);
    expect(await store.beginRebuild(counter, 'first', deadline, deadline - 30_000)).toBe('started');
    expect(await store.beginRebuild(counter, 'second', deadline + 30_000, deadline - 1)).toBe('building');
    expect(await store.beginRebuild(counter, 'second', deadline + 30_000, deadline)).toBe('started');
    // the first holder can no longer set its base: the counter is the second's now
    expect(await store.finishRebuild(counter, 'first', '5')).toBe('lost');
    expect(await store.finishRebuild(counter, 'second', '7')).toBe('done');
    expect((await store.readCounters([counter]))[0]).toMatchObject({ base: '7', lease: null });
  });
});
