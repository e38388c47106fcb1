import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelSubscription, changeSubscription } from '../../libs/subscriptions/index.js';
import { basicCatalog, customerIn, productIn, subscribe } from '../billing/fixtures.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { freshKey, MODES, startUsageStack, type UsageFrontEnd, type UsageStack } from './support.js';

/**
 * Usage dated outside its item's lifetime (before the item started, or at or after a change removed
 * it) would be counted by no period: it is refused with 422 on `timestamp`, alone and per event of
 * a batch, on every front end and in both modes (docs/decisions.md "Usage outside its item's
 * lifetime is refused").
 */

const DAY = 86_400_000;

describe.each(MODES)('usage outside its item lifetime, %s', (mode) => {
  let stack: UsageStack;
  let org: TestOrg;
  // a subscription starts at the start of its UTC day
  const start = new Date(Math.floor((Date.now() - 10 * DAY) / DAY) * DAY);
  const added = new Date(start.getTime() + 5 * DAY);
  const removed = new Date(start.getTime() + 8 * DAY);
  let original: number;
  let addedItem: number;

  beforeAll(async () => {
    stack = await startUsageStack(mode, { sinks: true });
    const db = stack.api.platform.db;
    org = await createTestOrg(db);
    const { seats, apiCalls } = await basicCatalog(db, org.orgId);
    const moreCalls = await productIn(db, org.orgId, {
      name: 'More calls',
      pricing_type: 'usage',
      unit_price: '0.10',
      currency: 'CAD',
      unit_label: 'calls',
    });
    const customerId = await customerIn(db, org.orgId);
    const subscription = await subscribe(
      db,
      org.orgId,
      {
        customer_id: customerId,
        items: [{ product_id: seats }, { product_id: apiCalls }],
        start_date: start,
      },
      start,
    );
    const seatItem = subscription.items.find((item) => item.usage_type === 'licensed')!.id;
    original = subscription.items.find((item) => item.usage_type === 'metered')!.id;
    const change = await changeSubscription(db, {
      subscriptionId: subscription.id,
      orgId: org.orgId,
      change: { items: [{ id: seatItem }, { id: original }, { product_id: moreCalls }] },
      now: added,
    });
    addedItem = change.subscription.items.find((item) => item.product_id === moreCalls)!.id;
    await changeSubscription(db, {
      subscriptionId: subscription.id,
      orgId: org.orgId,
      change: { items: [{ id: seatItem }, { id: addedItem }] },
      now: removed,
    });
  }, 60_000);
  afterAll(() => stack?.close());

  it('refuses usage after a removal or an end the front ends had cached, within a second, not the TTL', async () => {
    const db = stack.api.platform.db;
    const { seats, apiCalls } = await basicCatalog(db, org.orgId);
    const customerId = await customerIn(db, org.orgId);
    const subscription = await subscribe(
      db,
      org.orgId,
      {
        customer_id: customerId,
        items: [{ product_id: seats }, { product_id: apiCalls }],
        start_date: start,
      },
      start,
    );
    const seatItem = subscription.items.find((item) => item.usage_type === 'licensed')!.id;
    const metered = subscription.items.find((item) => item.usage_type === 'metered')!.id;
    const ending = await subscribe(
      db,
      org.orgId,
      { customer_id: customerId, items: [{ product_id: apiCalls }], start_date: start },
      start,
    );
    const endingItem = ending.items[0]!.id;
    const sendEach = (item: number, at: Date) =>
      Promise.all(
        stack.frontEnds.map(async (frontEnd) => ({
          name: frontEnd.name,
          status: (
            await frontEnd.post('/usage/events', {
              key: org.apiKey,
              idempotencyKey: freshKey('cached'),
              body: { subscription_item_id: item, quantity: 1, timestamp: at.toISOString() },
            })
          ).status,
        })),
      );
    const statuses = (results: { name: string; status: number }[]) => results.map((result) => result.status);
    const soon = () => new Date(Date.now() + 60_000); // dated after the end below, still accepted ahead
    // every front end has both items cached now
    expect(statuses(await sendEach(metered, new Date()))).toEqual(stack.frontEnds.map(() => 201));
    expect(statuses(await sendEach(endingItem, new Date()))).toEqual(stack.frontEnds.map(() => 201));

    const removedAt = new Date();
    await changeSubscription(db, {
      subscriptionId: subscription.id,
      orgId: org.orgId,
      change: { items: [{ id: seatItem }] },
      now: removedAt,
    });
    await db.transaction((tx) => cancelSubscription(tx, { subscriptionId: ending.id, orgId: org.orgId }));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const item of [metered, endingItem]) {
      const refused = await sendEach(item, soon());
      expect(refused, `item ${item}`).toEqual(stack.frontEnds.map(({ name }) => ({ name, status: 422 })));
    }
    // before the end still counts: late usage is usage
    const { rows } = await db.query<{ removed_at: Date }>(
      'SELECT removed_at FROM subscription_items WHERE id = $1',
      [metered],
    );
    expect(rows[0]!.removed_at.getTime()).toBeLessThanOrEqual(removedAt.getTime());
    expect(statuses(await sendEach(metered, new Date(rows[0]!.removed_at.getTime() - 1)))).toEqual(
      stack.frontEnds.map(() => 201),
    );
  });

  describe.each(['uws', 'api'] as const)('through %s', (name) => {
    const frontEnd = (): UsageFrontEnd => stack.frontEnds.find((f) => f.name === name)!;
    const send = (item: number, at: Date) =>
      frontEnd().post('/usage/events', {
        key: org.apiKey,
        idempotencyKey: freshKey('life'),
        body: { subscription_item_id: item, quantity: 1, timestamp: at.toISOString() },
      });

    it('refuses usage before its item started or from its removal on, and takes the boundaries inside', async () => {
      const cases: [number, Date, number][] = [
        [original, new Date(start.getTime() - 1), 422], // before the subscription started
        [original, start, 201],
        [original, new Date(removed.getTime() - 1), 201],
        [original, removed, 422], // removed at this instant
        [addedItem, new Date(added.getTime() - 1), 422], // before the change added it
        [addedItem, added, 201],
        [addedItem, new Date(), 201],
      ];
      for (const [item, at, status] of cases) {
        const response = await send(item, at);
        expect(response.status, `${item} at ${at.toISOString()}: ${JSON.stringify(response.body)}`).toBe(
          status,
        );
        if (status === 422) {
          expect(response.body).toMatchObject({
            error_code: 'VALIDATION_ERROR',
            details: [{ field: 'timestamp', code: 'out_of_range' }],
          });
          expect(response.body.details[0].message).toMatch(/started|removed/);
        }
      }
    });

    it('answers each event of a batch with its own refusal', async () => {
      const response = await frontEnd().post('/usage/events/batch', {
        key: org.apiKey,
        body: {
          events: [
            {
              subscription_item_id: original,
              quantity: 1,
              timestamp: removed.toISOString(),
              idempotency_key: freshKey(),
            },
            {
              subscription_item_id: addedItem,
              quantity: 1,
              timestamp: added.toISOString(),
              idempotency_key: freshKey(),
            },
            {
              subscription_item_id: addedItem,
              quantity: 1,
              timestamp: new Date(added.getTime() - 1).toISOString(),
              idempotency_key: freshKey(),
            },
          ],
        },
      });
      expect(response.status).toBe(200);
      const results = response.body.data as { status: number; error?: { details: { field: string }[] } }[];
      expect(results.map((result) => result.status)).toEqual([422, 201, 422]);
      expect(results[0]!.error!.details[0]!.field).toBe('timestamp');
      expect(results[2]!.error!.details[0]!.field).toBe('timestamp');
    });
  });
});
