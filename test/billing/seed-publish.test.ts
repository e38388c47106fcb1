import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoData } from '../../libs/seed/index.js';
import { CUSTOMERS_PER_ORG } from '../../libs/seed/seed.js';
import type { UsageEventRecord } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { recordCredentials } from '../helpers/run-log.js';

/**
 * What the demo seed hands its usage log: every usage event it wrote, once, in batches the log
 * takes, and only after the organization's transaction committed.
 */
describe('demo seed, publishing its usage', () => {
  let database: TestDatabase;
  let orgId: number;
  const batches: UsageEventRecord[][] = [];
  const committedAtPublish: boolean[] = [];
  const messages: string[] = [];
  // off the hour, in the past: the seed starts its subscriptions on the hour before it
  const now = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000 + 1_234_567);

  beforeAll(async () => {
    database = await createTestDatabase('seed_publish');
    const [org] = await seedDemoData(database.db, {
      orgs: 1,
      now,
      progress: (message) => messages.push(message),
      publishUsage: async (events) => {
        // another connection: it sees the organization only once the seed's transaction committed
        const { rows } = await database.db.query('SELECT 1 FROM organizations WHERE id = $1', [
          events[0]!.orgId,
        ]);
        committedAtPublish.push(rows.length === 1);
        batches.push(events);
      },
    });
    recordCredentials(org!.api_key);
    orgId = org!.id;
  }, 60_000);
  afterAll(() => database?.drop());

  it('publishes every usage event it wrote exactly once', async () => {
    const { rows } = await database.db.query<{ id: string }>(
      'SELECT id::text FROM usage_events WHERE org_id = $1 ORDER BY id',
      [orgId],
    );
    const published = batches.flat().map((event) => event.id);
    expect(published.length).toBeGreaterThan(0);
    expect([...published].sort()).toEqual(rows.map((row) => row.id).sort());
    expect(batches.flat().every((event) => event.orgId === orgId)).toBe(true);
  });

  it('publishes in batches of at most 1000 events, all full but the last', () => {
    expect(batches.length).toBeGreaterThan(1);
    expect(batches.slice(0, -1).every((batch) => batch.length === 1000)).toBe(true);
    expect(batches.at(-1)!.length).toBeGreaterThan(0);
    expect(batches.at(-1)!.length).toBeLessThanOrEqual(1000);
  });

  it('publishes only after the organization is committed', () => {
    expect(committedAtPublish.length).toBe(batches.length);
    expect(committedAtPublish.every(Boolean)).toBe(true);
  });

  it("draws each usage quantity within its product's range", async () => {
    const { rows } = await database.db.query<{ id: number; sku: string }>(
      `SELECT i.id::int AS id, p.sku FROM subscription_items i JOIN products p ON p.id = i.product_id
        WHERE i.org_id = $1`,
      [orgId],
    );
    const skus = new Map(rows.map((row) => [row.id, row.sku]));
    const ranges: Record<string, [number, number]> = {
      'USG-API': [200, 1400],
      'USG-API-US': [150, 900],
      'USG-STO': [2, 12],
      'USG-CMP': [1, 9],
      'USG-MSG': [300, 1500],
      'USG-MSG-Q': [1, 10],
    };
    const outside = batches.flat().filter((event) => {
      const [low, high] = ranges[skus.get(event.subscriptionItemId)!]!;
      const quantity = Number(event.quantity);
      return !Number.isInteger(quantity) || quantity < low || quantity > high;
    });
    expect(outside).toEqual([]);
  });

  it('dates usage on the hour after each start, every other day, recorded after it occurred and before now', () => {
    const events = batches.flat();
    expect(events.every((event) => event.occurredAtMs % 3_600_000 === 0)).toBe(true);
    expect(events.every((event) => event.occurredAtMs < now.getTime())).toBe(true);
    expect(events.every((event) => event.recordedAtMs > event.occurredAtMs)).toBe(true);
    const byItem = new Map<number, number[]>();
    for (const event of events) {
      byItem.set(event.subscriptionItemId, [
        ...(byItem.get(event.subscriptionItemId) ?? []),
        event.occurredAtMs,
      ]);
    }
    for (const itemTimes of byItem.values()) {
      const times = itemTimes.sort((a, b) => a - b);
      // the last one is the last before now: another two days on would be past it
      expect(times.at(-1)! + 2 * 86_400_000).toBeGreaterThanOrEqual(now.getTime());
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(2 * 86_400_000);
    }
  });

  it('creates exactly the stated number of customers and reports them', async () => {
    const { rows } = await database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM customers WHERE org_id = $1',
      [orgId],
    );
    expect(rows[0]!.n).toBe(CUSTOMERS_PER_ORG);
    expect(CUSTOMERS_PER_ORG).toBe(64);
    expect(messages[0]).toBe('seeding organization 1/1: Northwind Cloud');
    const [counts] = (
      await database.db.query<{ products: number; subscriptions: number; events: number }>(
        `SELECT (SELECT count(*)::int FROM products WHERE org_id = $1) AS products,
                (SELECT count(*)::int FROM subscriptions WHERE org_id = $1) AS subscriptions,
                (SELECT count(*)::int FROM usage_events WHERE org_id = $1) AS events`,
        [orgId],
      )
    ).rows;
    expect(messages[1]).toMatch(
      new RegExp(
        `^  64 customers, ${counts!.products} products, ${counts!.subscriptions} subscriptions, ` +
          `${counts!.events} usage events, \\d+ invoices$`,
      ),
    );
  });
});
