import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertPolicy, createAlert, evaluateAlerts } from '../../libs/guardrails/index.js';
import { PostgresUsageSink, type UsageReadStores } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { readStoresOver, setSinkWatermark } from '../helpers/read-stores.js';
import { uniqueName } from '../helpers/services.js';
import { meteredSubscriptionThisMonth, usageEventRecord } from './support.js';

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
