import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../libs/db/index.js';
import { SubscriptionItemCache } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { createUsageItems, type UsageItems } from './support.js';

describe('subscription item cache', () => {
  let database: TestDatabase;
  let orgId: number;
  let items: UsageItems;
  let otherOrgItems: UsageItems;

  beforeAll(async () => {
    database = await createTestDatabase('item_cache');
    orgId = (await createTestOrg(database.db)).orgId;
    items = await createUsageItems(database.db, orgId);
    otherOrgItems = await createUsageItems(database.db, (await createTestOrg(database.db)).orgId);
  });
  afterAll(() => database.drop());

  /**
   * The file's database, its lookups counted (each query's item ids) and, while `hold()` is on,
   * each answer kept back after Postgres gave it, as a slow connection would: the row is read
   * then, the cache sees it later.
   */
  function instrumented() {
    const lookups: number[][] = [];
    let answered = 0;
    let gate: Promise<void> | undefined;
    const db: Queryable = {
      query: (async (text: string, values?: unknown[]) => {
        lookups.push(((values ?? [])[1] as number[]).map(Number));
        const result = await database.db.query(text, values);
        answered++;
        await gate;
        return result;
      }) as Queryable['query'],
    };
    return {
      db,
      lookups,
      answered: () => answered,
      /** Keeps the answers back from now on; the function returned releases them. */
      hold(): () => void {
        let release!: () => void;
        gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        return () => {
          gate = undefined;
          release();
        };
      },
    };
  }

  /** The cache's clock, moved by hand: `set(ms)` is `ms` after the start. */
  function clock() {
    const T0 = Date.UTC(2026, 10, 1);
    let now = T0;
    return {
      now: () => now,
      set: (ms: number) => {
        now = T0 + ms;
      },
    };
  }

  async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error('timed out waiting for the lookup');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  const SETTINGS = { ttlMs: 60_000, negativeTtlMs: 2000 };

  it('keeps a known item for the ttl and an unknown one only for the shorter negative ttl', async () => {
    const { db, lookups } = instrumented();
    const time = clock();
    const cache = new SubscriptionItemCache(db, { ...SETTINGS, maxEntries: 100, now: time.now });
    // another organization's item: no such item in this one
    const unknown = otherOrgItems.metered;
    expect(await cache.usageType(orgId, items.metered)).toBe('metered');
    expect(await cache.usageType(orgId, unknown)).toBeUndefined();
    expect(lookups).toHaveLength(2);

    time.set(SETTINGS.negativeTtlMs - 1);
    expect(cache.cached(orgId, unknown)).toBeDefined();
    expect(await cache.usageType(orgId, unknown)).toBeUndefined();
    expect(lookups).toHaveLength(2);
    // an item created since is found within the negative ttl, not a whole ttl later
    time.set(SETTINGS.negativeTtlMs);
    expect(cache.cached(orgId, unknown)).toBeUndefined();
    expect(await cache.usageType(orgId, unknown)).toBeUndefined();
    expect(lookups).toHaveLength(3);
    expect(lookups.at(-1)).toEqual([unknown]);

    time.set(SETTINGS.ttlMs - 1);
    expect(cache.cached(orgId, items.metered)?.usageType).toBe('metered');
    expect(await cache.usageType(orgId, items.metered)).toBe('metered');
    expect(lookups).toHaveLength(3);
    time.set(SETTINGS.ttlMs);
    expect(cache.cached(orgId, items.metered)).toBeUndefined();
    expect(await cache.usageType(orgId, items.metered)).toBe('metered');
    expect(lookups).toHaveLength(4);
    expect(lookups.at(-1)).toEqual([items.metered]);
  });

  it('does not keep what a lookup read before the item was forgotten, nor lets a later request join it', async () => {
    // items of their own: a change removes them below
    const own = await createUsageItems(database.db, orgId);
    const { db, lookups, answered, hold } = instrumented();
    const cache = new SubscriptionItemCache(db, { ...SETTINGS, maxEntries: 100, now: clock().now });
    const remove = async (id: number) => {
      const { rows } = await database.db.query<{ removed_at: Date }>(
        "UPDATE subscription_items SET removed_at = date_trunc('second', now()) WHERE id = $1 RETURNING removed_at",
        [id],
      );
      return rows[0]!.removed_at.getTime();
    };

    // a lookup reads the item while it is live; before the cache has its answer, a change removes
    // the item and it is forgotten (as the change poller does)
    let release = hold();
    const reading = cache.lifetime(orgId, own.metered);
    await until(() => answered() === 1);
    const removedAt = await remove(own.metered);
    cache.forget([{ orgId, id: own.metered }]);
    release();
    expect((await reading).removedAtMs).toBeUndefined();
    expect(cache.cached(orgId, own.metered)).toBeUndefined();
    // the next request reads it again, removed
    expect((await cache.lifetime(orgId, own.metered)).removedAtMs).toBe(removedAt);
    expect(lookups).toHaveLength(2);
    expect(cache.cached(orgId, own.metered)?.removedAtMs).toBe(removedAt);

    // a request after the forget does not join the lookup still in flight: it reads anew
    release = hold();
    const stale = cache.lifetime(orgId, own.otherMetered);
    await until(() => answered() === 3);
    const otherRemovedAt = await remove(own.otherMetered);
    cache.forget([{ orgId, id: own.otherMetered }]);
    const fresh = cache.lifetime(orgId, own.otherMetered);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(lookups).toHaveLength(4);
    release();
    const [before, after] = await Promise.all([stale, fresh]);
    expect(before.removedAtMs).toBeUndefined();
    expect(after.removedAtMs).toBe(otherRemovedAt);
    expect(cache.cached(orgId, own.otherMetered)?.removedAtMs).toBe(otherRemovedAt);
  });

  it('holds at most maxEntries items, letting the oldest go first', async () => {
    const { db, lookups } = instrumented();
    const cache = new SubscriptionItemCache(db, { ...SETTINGS, maxEntries: 2, now: clock().now });
    for (const id of [items.metered, items.otherMetered, items.licensed]) await cache.usageType(orgId, id);
    expect(cache.cached(orgId, items.metered)).toBeUndefined();
    expect(cache.cached(orgId, items.otherMetered)?.usageType).toBe('metered');
    expect(cache.cached(orgId, items.licensed)?.usageType).toBe('licensed');
    expect(lookups).toHaveLength(3);
    // the one let go is read again
    expect(await cache.usageType(orgId, items.metered)).toBe('metered');
    expect(lookups).toHaveLength(4);
  });

  it('reads an expired entry again in its own place, letting no live item go', async () => {
    const { db, lookups } = instrumented();
    const time = clock();
    const cache = new SubscriptionItemCache(db, { ...SETTINGS, maxEntries: 2, now: time.now });
    const unknown = otherOrgItems.metered;
    await cache.usageType(orgId, items.metered);
    time.set(1);
    await cache.usageType(orgId, unknown);
    // the unknown item's shorter ttl has passed: read again, it replaces its own expired entry
    time.set(SETTINGS.negativeTtlMs + 1);
    expect(await cache.usageType(orgId, unknown)).toBeUndefined();
    expect(lookups).toHaveLength(3);
    expect(cache.cached(orgId, items.metered)?.usageType).toBe('metered');
    expect(cache.cached(orgId, unknown)).toBeDefined();
  });

  it('looks up the misses of one turn in one query (a batch of 1000 new ids), each in its organization', async () => {
    let queries = 0;
    const counting: Queryable = {
      query: ((...args: Parameters<Queryable['query']>) => {
        queries++;
        return database.db.query(...args);
      }) as Queryable['query'],
    };
    const cache = new SubscriptionItemCache(counting, {
      ttlMs: 60_000,
      negativeTtlMs: 2000,
      maxEntries: 10_000,
    });
    const unknown = Array.from({ length: 997 }, (_, i) => 900_000_000 + i);
    const answers = await Promise.all(
      [items.metered, items.licensed, otherOrgItems.metered, ...unknown].map((id) =>
        cache.usageType(orgId, id),
      ),
    );
    expect(queries).toBe(1);
    expect(answers.slice(0, 3)).toEqual(['metered', 'licensed', undefined]);
    expect(answers.slice(3).every((answer) => answer === undefined)).toBe(true);
    // answered from the cache now, without waiting
    expect(cache.cached(orgId, items.metered)).toEqual(expect.objectContaining({ usageType: 'metered' }));
    expect(await cache.usageType(orgId, unknown[0]!)).toBeUndefined();
    expect(queries).toBe(1);
  });

  it('forgets an item whose change committed after a poll though it is dated before it (the margin)', async () => {
    // items of their own: their change rows below concern no other test
    const own = await createUsageItems(database.db, orgId);
    const cache = new SubscriptionItemCache(database.db, { ...SETTINGS, maxEntries: 100 });
    expect(await cache.usageType(orgId, own.metered)).toBe('metered');
    expect(await cache.usageType(orgId, own.otherMetered)).toBe('metered');
    cache.watchChanges(20);
    try {
      // a few polls have read past the row's time when its transaction commits
      await new Promise((resolve) => setTimeout(resolve, 200));
      await database.db.query(
        `INSERT INTO usage_item_changes (org_id, subscription_item_id, changed_at)
         VALUES ($1, $2, clock_timestamp() - interval '10 seconds')`,
        [orgId, own.metered],
      );
      await until(() => cache.cached(orgId, own.metered) === undefined);
      // the other item of the subscription had no change: still cached
      expect(cache.cached(orgId, own.otherMetered)?.usageType).toBe('metered');
    } finally {
      await cache.stopWatching();
    }
  });

  it('forgets an item once per change, though the margin reads its row again for a while', async () => {
    // items of their own: their change rows below concern no other test
    const own = await createUsageItems(database.db, orgId);
    let polls = 0;
    const counting: Queryable = {
      query: (async (...args: Parameters<Queryable['query']>) => {
        const result = await database.db.query(...args);
        if (String(args[0]).includes('LEFT JOIN usage_item_changes')) polls++;
        return result;
      }) as Queryable['query'],
    };
    const cache = new SubscriptionItemCache(counting, { ...SETTINGS, maxEntries: 100 });
    expect(await cache.usageType(orgId, own.metered)).toBe('metered');
    cache.watchChanges(20);
    try {
      await database.db.query(
        'INSERT INTO usage_item_changes (org_id, subscription_item_id, changed_at) VALUES ($1, $2, clock_timestamp())',
        [orgId, own.metered],
      );
      await until(() => cache.cached(orgId, own.metered) === undefined);
      // read again after the change: kept, while later polls still read the row within the margin
      expect(await cache.usageType(orgId, own.metered)).toBe('metered');
      const after = polls;
      await until(() => polls >= after + 3);
      expect(cache.cached(orgId, own.metered)?.usageType).toBe('metered');
    } finally {
      await cache.stopWatching();
    }
  });

  /**
   * Watches with a cache of entries living `ttlMs` until a poll pruned some of the change rows
   * `rows` (or 5 s passed); the items of the rows left, in order.
   */
  async function changesLeftOnceAPollPrunes(ttlMs: number, rows: { id: string }[]): Promise<number[]> {
    const cache = new SubscriptionItemCache(database.db, { ttlMs, negativeTtlMs: 2000, maxEntries: 100 });
    const left = async () =>
      (
        await database.db.query<{ subscription_item_id: string }>(
          'SELECT subscription_item_id FROM usage_item_changes WHERE id = ANY($1::bigint[]) ORDER BY 1',
          [rows.map((row) => row.id)],
        )
      ).rows.map((row) => Number(row.subscription_item_id));
    cache.watchChanges(20);
    try {
      const deadline = Date.now() + 5000;
      while ((await left()).length === rows.length && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      return await left();
    } finally {
      await cache.stopWatching();
    }
  }

  it('deletes the change rows older than an hour as it polls, and keeps the recent ones', async () => {
    const { rows } = await database.db.query<{ id: string }>(
      `INSERT INTO usage_item_changes (org_id, subscription_item_id, changed_at)
       VALUES ($1, 1, clock_timestamp() - interval '2 hours'),
              ($1, 2, clock_timestamp() - interval '61 minutes'),
              ($1, 3, clock_timestamp() - interval '59 minutes'),
              ($1, 4, clock_timestamp())
       RETURNING id`,
      [orgId],
    );
    expect(await changesLeftOnceAPollPrunes(60_000, rows)).toEqual([3, 4]);
  });

  it('keeps the change rows as long as a cache entry lives, when its ttl is over the hour', async () => {
    const { rows } = await database.db.query<{ id: string }>(
      `INSERT INTO usage_item_changes (org_id, subscription_item_id, changed_at)
       VALUES ($1, 5, clock_timestamp() - interval '61 minutes'),
              ($1, 6, clock_timestamp() - interval '3 hours')
       RETURNING id`,
      [orgId],
    );
    // an entry read two hours ago may still be held: a change of the last two hours (and the
    // margins) may still concern it
    expect(await changesLeftOnceAPollPrunes(2 * 3_600_000, rows)).toEqual([5]);
  });
});
