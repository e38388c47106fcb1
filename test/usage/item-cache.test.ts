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
    const cache = new SubscriptionItemCache(database.db, {
      ttlMs: 60_000,
      negativeTtlMs: 2000,
      maxEntries: 100,
    });
    cache.watchChanges(20);
    try {
      const left = async () =>
        (
          await database.db.query<{ subscription_item_id: string }>(
            'SELECT subscription_item_id FROM usage_item_changes WHERE id = ANY($1::bigint[]) ORDER BY 1',
            [rows.map((row) => row.id)],
          )
        ).rows.map((row) => Number(row.subscription_item_id));
      const deadline = Date.now() + 5000;
      while ((await left()).length === 4 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(await left()).toEqual([3, 4]);
    } finally {
      await cache.stopWatching();
    }
  });
});
