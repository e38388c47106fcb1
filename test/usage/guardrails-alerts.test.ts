import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setCreditTopUp } from '../../libs/billing/index.js';
import { afterCreditsMoved, alertPolicy, createAlert, evaluateAlerts } from '../../libs/guardrails/index.js';
import { PostgresUsageSink, type UsageReadStores } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { readStoresOver, setSinkWatermark } from '../helpers/read-stores.js';
import { uniqueName } from '../helpers/services.js';
import { eventually, meteredSubscriptionThisMonth, usageEventRecord } from './support.js';

/*
 * evaluateAlerts (libs/guardrails/alerts.ts) and the alert policy (alert-policy.ts), called
 * directly over the embedded read-back, or the distributed one whose pg-sink watermark the test
 * sets.
 */

let database: TestDatabase;
let stores: UsageReadStores;
let org: TestOrg;

beforeAll(async () => {
  database = await createTestDatabase('guardrails_alerts');
  stores = readStoresOver(database.db);
  org = await createTestOrg(database.db);
});
afterAll(async () => {
  await stores?.close();
  await database?.drop();
});

const stateOf = async (alertId: string) =>
  (
    await database.db.query<{ status: string; value: string | null }>(
      'SELECT status, value::text FROM alerts WHERE id = $1',
      [alertId],
    )
  ).rows[0]!;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Prices the item's product in `currency`: another than its subscription's cannot be invoiced. */
const priceItemIn = (item: number, currency: string) =>
  database.db.query(
    `UPDATE products SET currency = $2 WHERE id = (SELECT product_id FROM subscription_items WHERE id = $1)`,
    [item, currency],
  );

describe('an alert evaluated without moving', () => {
  it('a credit alert left unread is read once its customer can be invoiced again', async () => {
    const { subscription, item } = await meteredSubscriptionThisMonth(database.db, org.orgId);
    await priceItemIn(item, 'USD');
    const alert = await createAlert(database.db, stores, org.orgId, {
      subscription_id: subscription.id,
      metric: 'credit_balance',
      threshold: '0',
    });
    expect(alert).toMatchObject({ status: 'OK', value: null });
    await priceItemIn(item, 'CAD');
    // no credit, nothing used yet: projected 0, not below 0, so still OK, now with its value
    expect(await evaluateAlerts(database.db, stores, { alertIds: [alert.id] })).toEqual([]);
    expect(await stateOf(alert.id)).toEqual({ status: 'OK', value: '0.00000000' });
  });
});

describe('the alert policy, called as the evaluator calls it', () => {
  it('a suspect that fires lets its batch go at once, though no reading counts what was handed', async () => {
    // the watermark lags a minute: no reading's as_of reaches the moment the batch was handed
    const topic = uniqueName('alerts_topic');
    const lagging = readStoresOver(database.db, topic);
    await setSinkWatermark(database.db, topic, new Date(Date.now() - 60_000));
    try {
      const { customerId, subscription, item } = await meteredSubscriptionThisMonth(database.db, org.orgId);
      const alert = await createAlert(database.db, lagging, org.orgId, {
        subscription_id: subscription.id,
        metric: 'usage_quantity',
        subscription_item_id: item,
        threshold: '10',
      });
      const policy = alertPolicy(database.db, { settleMs: 2500 });
      const crossing = usageEventRecord(org.orgId, item, '12');
      await new PostgresUsageSink(database.db).write([crossing]);
      policy.observe?.([crossing]);
      const started = Date.now();
      // its reading predates the policy: no bound, a suspect, read, and it fires (Postgres has
      // the 12): fired is final, so no waiting for the watermark (10 s)
      await policy.evaluate([{ orgId: org.orgId, customerId, subscriptionId: subscription.id }], lagging);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await stateOf(alert.id)).toEqual({ status: 'TRIGGERED', value: '12.00000000' });
    } finally {
      await lagging.close();
    }
  });
});

describe('a quantity alert the alert policy skipped', () => {
  it('is swept once refreshMs passed since the skip, not before', async () => {
    const refreshMs = 2000;
    // a short settle time: a reading made just after the policy starts bounds the alert
    const policy = alertPolicy(database.db, { settleMs: 100, refreshMs });
    await sleep(200);
    const { customerId, subscription, item } = await meteredSubscriptionThisMonth(database.db, org.orgId);
    const alert = await createAlert(database.db, stores, org.orgId, {
      subscription_id: subscription.id,
      metric: 'usage_quantity',
      subscription_item_id: item,
      threshold: '100',
    });
    const used = usageEventRecord(org.orgId, item, '60');
    await new PostgresUsageSink(database.db).write([used]);
    policy.observe?.([used]);
    const skippedAt = Date.now();
    // bound 0 + 60, below 100, on a fresh reading: skipped, the row keeps the reading made at creation
    await policy.evaluate([{ orgId: org.orgId, customerId, subscriptionId: subscription.id }], stores);
    expect(await stateOf(alert.id)).toEqual({ status: 'OK', value: '0.00000000' });
    // the sweep looks every refreshMs / 2, and reads only what was skipped refreshMs ago
    await sleep(Math.max(0, skippedAt + refreshMs * 0.75 - Date.now()));
    expect(await stateOf(alert.id)).toEqual({ status: 'OK', value: '0.00000000' });
    await eventually(
      async () => expect(await stateOf(alert.id)).toEqual({ status: 'OK', value: '60.00000000' }),
      5000,
    );
  });
});

describe('after credits moved', () => {
  it("checks the customer's top-up and evaluates its credit alerts", async () => {
    const { customerId, subscription, item } = await meteredSubscriptionThisMonth(database.db, org.orgId);
    // nothing upcoming, no credit: projected 0, not below a threshold of 0
    const alert = await createAlert(database.db, stores, org.orgId, {
      subscription_id: subscription.id,
      metric: 'credit_balance',
      threshold: '0',
    });
    expect(alert).toMatchObject({ status: 'OK', value: '0.00000000' });
    // 5 calls counted, no evaluator running: 5.00 + GST 0.25 upcoming, projected -5.25
    await new PostgresUsageSink(database.db).write([usageEventRecord(org.orgId, item, '5')]);
    // configured without a check (the library call): only afterCreditsMoved tops it up
    await setCreditTopUp(database.db, org.orgId, customerId, {
      enabled: true,
      threshold: '10',
      target: '100',
    });
    await afterCreditsMoved(database.db, stores, [{ orgId: org.orgId, customerId }]);
    const { rows } = await database.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM credit_grants WHERE org_id = $1 AND customer_id = $2 AND source = 'top_up'`,
      [org.orgId, customerId],
    );
    expect(rows[0]!.n).toBe(1);
    // the top-up waits for its payment (PENDING): projected is still -5.25, below 0
    expect(await stateOf(alert.id)).toEqual({ status: 'TRIGGERED', value: '-5.25000000' });
  });
});
