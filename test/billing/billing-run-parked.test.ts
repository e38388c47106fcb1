import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling, type UsageForTransaction, usageSource } from '../../libs/billing/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { cancelSubscription, unparkSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { insertProduct, insertSubscription } from '../helpers/billing-fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { invoicesOf, orgWithCatalog, recordUsage, subscribe } from './fixtures.js';

/**
 * Parked subscriptions (a period that can never be invoiced): set aside by the run that met the
 * refusal, skipped by every run after it (due periods and late usage alike) until unparked.
 */

let database: TestDatabase;
let usage: UsageForTransaction;

beforeAll(async () => {
  database = await createTestDatabase('billing_run_parked');
  usage = usageSource(new PostgresUsageAggregator(database.db));
});
afterAll(() => database.drop());

const at = (iso: string) => new Date(iso);

/** A subscription stored in a currency without a known minor unit: none of its periods can be invoiced. */
async function unbillableSubscription(orgId: number, customerId: number) {
  const product = await insertProduct(database.db, orgId, { name: 'Legacy seats', currency: 'XYZ' });
  return insertSubscription(database.db, orgId, {
    customerId,
    currency: 'XYZ',
    startDate: at('2026-01-01T00:00:00Z'),
    items: [{ productId: product.id }],
  });
}

/** Sets a subscription aside as a run that met a refusal does. */
async function park(subscriptionId: number, reason: string) {
  await database.db.query(
    `UPDATE subscriptions SET billing_parked_at = now(), billing_parked_reason = $2 WHERE id = $1`,
    [subscriptionId, reason],
  );
}

describe('billing run: parked subscriptions', () => {
  it('a later run does not claim a parked subscription again, so a run inside a transaction succeeds', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const legacy = await unbillableSubscription(orgId, customerId);
    const good = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: at('2026-01-01T00:00:00Z'),
    });
    const first = await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
    expect(first.parked.map((p) => p.subscription_id)).toEqual([legacy.id]);
    expect(first.failures).toEqual([]);

    // inside a caller's transaction a failing subscription is thrown, not parked: the parked one
    // must not be claimed at all for this run to bill the good one
    const progress: string[] = [];
    const second = await database.db.transaction((tx) =>
      runBilling(tx, {
        usage,
        orgId,
        now: at('2026-03-01T00:00:00Z'),
        progress: (message) => progress.push(message),
      }),
    );
    expect(second).toMatchObject({ subscriptions_processed: 1, invoices_created: 1, failures: [] });
    expect(second.parked).toEqual([first.parked[0]]);
    expect(progress.filter((message) => message.includes('parked'))).toEqual([]);
    expect(await invoicesOf(database.db, good.id)).toHaveLength(2);
    expect(await invoicesOf(database.db, legacy.id)).toHaveLength(0);
  });

  it('lists the parked subscriptions in the order they were parked, not by id', async () => {
    const { orgId, customerId } = await orgWithCatalog(database.db);
    const older = await unbillableSubscription(orgId, customerId);
    const newer = await unbillableSubscription(orgId, customerId);
    // the newer subscription is parked by a first run, the older one by a second
    const first = await runBilling(database.db, {
      usage,
      orgId,
      subscriptionIds: [newer.id],
      now: at('2026-02-01T00:00:00Z'),
    });
    expect(first.parked.map((p) => p.subscription_id)).toEqual([newer.id]);
    const second = await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
    expect(second.parked.map((p) => p.subscription_id)).toEqual([newer.id, older.id]);
    expect(Date.parse(second.parked[0]!.parked_at)).toBeLessThan(Date.parse(second.parked[1]!.parked_at));
  });

  it("bills no late usage of an ended subscription while it is parked, and bills it once it's unparked", async () => {
    const { orgId, customerId, apiCalls } = await orgWithCatalog(database.db);
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: apiCalls }],
      start_date: at('2026-01-01T00:00:00Z'),
    });
    const metered = subscription.items[0]!.id;
    await recordUsage(database.db, orgId, metered, '5', '2026-01-05T00:00:00Z');
    const january = await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
    expect(january.invoice_ids).toHaveLength(1);
    await park(subscription.id, 'set aside by an operator');
    await database.db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        withoutInvoicing: true,
        now: at('2026-02-10T00:00:00Z'),
      }),
    );
    await recordUsage(database.db, orgId, metered, '3', '2026-01-20T00:00:00Z'); // late, in January

    const whileParked = await runBilling(database.db, { usage, orgId, now: at('2026-02-11T00:00:00Z') });
    expect(whileParked.invoice_ids).toEqual([]);
    expect(await invoicesOf(database.db, subscription.id)).toHaveLength(1);

    await database.db.transaction((tx) => unparkSubscription(tx, { subscriptionId: subscription.id, orgId }));
    const unparked = await runBilling(database.db, { usage, orgId, now: at('2026-02-11T00:00:00Z') });
    expect(unparked.invoice_ids).toHaveLength(1);
    const late = await getInvoice(database.db, orgId, unparked.invoice_ids[0]!);
    expect(late.items.map((line) => [line.quantity, line.line_total_pre_tax])).toEqual([
      ['3.0000', '3.00000000'],
    ]);
  });
});
