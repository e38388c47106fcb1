import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../db/index.js';
import { SubscriptionItemCache } from './items.js';

/**
 * Ingest resolves an event's subscription item through this cache (docs/architecture.md, "A usage
 * event's way", step 2). A fake database answers the lookups and counts them; the clock is moved
 * by hand. test/usage/item-cache.test.ts runs the same cache against Postgres.
 */
const T0 = Date.UTC(2026, 10, 1);
const SETTINGS = { ttlMs: 60_000, negativeTtlMs: 2000 };

function fakeDatabase(known: Record<string, 'metered' | 'licensed'>) {
  const lookups: number[][] = [];
  let hold: Promise<void> | undefined;
  const db = {
    query: async (_sql: string, params: unknown[]) => {
      const [orgs, ids] = params as [number[], number[]];
      lookups.push(ids);
      await hold;
      const rows = ids
        .map((id, i) => ({ orgId: orgs[i]!, id, usageType: known[`${orgs[i]}:${id}`] }))
        .filter((item) => item.usageType)
        .map(({ orgId, id, usageType }) => ({
          org_id: orgId,
          id,
          usage_type: usageType,
          started_at: new Date(T0 - 86_400_000),
          removed_at: null,
          start_date: new Date(T0 - 86_400_000),
          billing_period: 'monthly',
          billing_anchor_day: 31,
          current_period_start: new Date(T0 - 86_400_000),
          current_period_end: new Date(T0 + 29 * 86_400_000),
        }));
      return { rows, rowCount: rows.length };
    },
  };
  return {
    db: db as unknown as Queryable,
    lookups,
    holdLookups(until: Promise<void>) {
      hold = until;
    },
  };
}

function clock() {
  let now = T0;
  return {
    now: () => now,
    set: (ms: number) => {
      now = T0 + ms;
    },
  };
}

describe('the subscription item cache', () => {
  it('keeps a known item for the ttl and an unknown one only for the shorter negative ttl', async () => {
    const { db, lookups } = fakeDatabase({ '1:7': 'metered' });
    const time = clock();
    const cache = new SubscriptionItemCache(db, { ...SETTINGS, maxEntries: 100, now: time.now });
    expect(await cache.usageType(1, 7)).toBe('metered');
    expect(await cache.usageType(1, 8)).toBeUndefined();
    expect(lookups).toHaveLength(2);

    time.set(SETTINGS.negativeTtlMs - 1);
    expect(cache.cached(1, 8)).toBeDefined();
    expect(await cache.usageType(1, 8)).toBeUndefined();
    expect(lookups).toHaveLength(2);
    // an item created since is found within the negative ttl, not a whole ttl later
    time.set(SETTINGS.negativeTtlMs);
    expect(cache.cached(1, 8)).toBeUndefined();
    expect(await cache.usageType(1, 8)).toBeUndefined();
    expect(lookups).toHaveLength(3);

    time.set(SETTINGS.ttlMs - 1);
    expect(cache.cached(1, 7)?.usageType).toBe('metered');
    time.set(SETTINGS.ttlMs);
    expect(cache.cached(1, 7)).toBeUndefined();
    expect(await cache.usageType(1, 7)).toBe('metered');
    expect(lookups.at(-1)).toEqual([7]);
  });

  it('does not keep what a lookup read before the item was forgotten (it may predate the change)', async () => {
    const { db, lookups, holdLookups } = fakeDatabase({ '1:7': 'metered' });
    const cache = new SubscriptionItemCache(db, { ...SETTINGS, maxEntries: 100, now: clock().now });
    let release!: () => void;
    holdLookups(
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    const reading = cache.usageType(1, 7);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(lookups).toHaveLength(1);
    cache.forget([{ orgId: 1, id: 7 }]);
    release();
    expect(await reading).toBe('metered');
    expect(cache.cached(1, 7)).toBeUndefined();
    // the next request reads it again
    holdLookups(Promise.resolve());
    expect(await cache.usageType(1, 7)).toBe('metered');
    expect(lookups).toHaveLength(2);
    expect(cache.cached(1, 7)?.usageType).toBe('metered');

    // a request after the forget does not join the lookup in flight: it reads anew
    cache.forget([{ orgId: 1, id: 7 }]);
    holdLookups(
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    const stale = cache.usageType(1, 7);
    await new Promise((resolve) => setTimeout(resolve, 0));
    cache.forget([{ orgId: 1, id: 7 }]);
    const fresh = cache.usageType(1, 7);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(lookups).toHaveLength(4);
    release();
    expect(await Promise.all([stale, fresh])).toEqual(['metered', 'metered']);
  });

  it('holds at most maxEntries items, letting the oldest go first', async () => {
    const { db } = fakeDatabase({ '1:1': 'metered', '1:2': 'metered', '1:3': 'licensed' });
    const cache = new SubscriptionItemCache(db, { ...SETTINGS, maxEntries: 2, now: clock().now });
    for (const id of [1, 2, 3]) await cache.usageType(1, id);
    expect(cache.cached(1, 1)).toBeUndefined();
    expect(cache.cached(1, 2)?.usageType).toBe('metered');
    expect(cache.cached(1, 3)?.usageType).toBe('licensed');
  });
});
