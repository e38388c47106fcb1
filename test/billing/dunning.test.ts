import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRefund,
  recordPayment,
  runBilling,
  type UsageForTransaction,
  usageSource,
  withdrawInvoice,
} from '../../libs/billing/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { getSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { basicCatalog, customerIn, subscribe } from './fixtures.js';

/*
 * Dunning at its boundary day (collection/dunning.ts). Overdue is the spec's derivation: the due
 * date has passed. An invoice is due on its due date, all of that UTC day: overdue from the next
 * day's first instant, never on the day itself. Invoices of 10.00 + 13 % HST = 11.30, payment
 * terms 30 days: the invoice of the period ending 2026-02-01 is due 2026-03-03.
 */

let database: TestDatabase;
let usage: UsageForTransaction;

beforeAll(async () => {
  database = await createTestDatabase('dunning');
  usage = usageSource(new PostgresUsageAggregator(database.db));
});
afterAll(() => database.drop());

const at = (iso: string) => new Date(iso);

async function billedSubscription() {
  const { orgId } = await createTestOrg(database.db);
  const { seats } = await basicCatalog(database.db, orgId);
  const customerId = await customerIn(database.db, orgId);
  const subscription = await subscribe(database.db, orgId, {
    customer_id: customerId,
    items: [{ product_id: seats }],
    start_date: at('2026-01-01T00:00:00Z'),
  });
  const run = await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
  const invoice = await getInvoice(database.db, orgId, run.invoice_ids[0]!);
  expect(invoice.due_date).toBe('2026-03-03');
  return { orgId, subscriptionId: subscription.id, invoiceId: invoice.id };
}

const statusOf = async (orgId: number, subscriptionId: number) =>
  (await getSubscription(database.db, orgId, subscriptionId)).status;

/**
 * Paid in full by a write outside payments, credit memos and withdrawals (which restore at once):
 * only a billing run then sees that nothing is overdue.
 */
const settleByHand = (orgId: number, invoiceId: string) =>
  database.db.query(
    `UPDATE invoices SET status = 'PAID', amount_paid = total WHERE org_id = $1 AND id = $2`,
    [orgId, invoiceId],
  );

describe('dunning at the boundary day', () => {
  it('an invoice due today is not overdue, from its first instant to its last; the next day it is', async () => {
    const { orgId, subscriptionId } = await billedSubscription();
    for (const now of ['2026-03-03T00:00:00Z', '2026-03-03T23:59:59.999Z']) {
      const run = await runBilling(database.db, { usage, orgId, now: at(now) });
      expect(run.marked_past_due, now).toBe(0);
      expect(await statusOf(orgId, subscriptionId), now).toBe('active');
    }
    const next = await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect(next.marked_past_due).toBe(1);
    expect(await statusOf(orgId, subscriptionId)).toBe('past_due');
  });

  it('paying what is overdue restores the subscription even while another invoice is due that day', async () => {
    const { orgId, subscriptionId, invoiceId: overdue } = await billedSubscription();
    // the next invoice (period ending 2026-03-01) is due 2026-03-31; on that day the first is overdue
    const march = await runBilling(database.db, { usage, orgId, now: at('2026-03-31T12:00:00Z') });
    expect(march.marked_past_due).toBe(1);
    const dueToday = await getInvoice(database.db, orgId, march.invoice_ids[0]!);
    expect(dueToday.due_date).toBe('2026-03-31');
    await database.db.transaction((tx) =>
      recordPayment(tx, { invoiceId: overdue, amount: '11.30', now: at('2026-03-31T12:00:00Z') }),
    );
    // the one left is due today, not overdue: nothing keeps the subscription past due
    expect(await statusOf(orgId, subscriptionId)).toBe('active');
    const rerun = await runBilling(database.db, { usage, orgId, now: at('2026-03-31T23:59:59Z') });
    expect(rerun.marked_past_due).toBe(0);
    expect(await statusOf(orgId, subscriptionId)).toBe('active');
  });
  it('withdrawing the overdue invoice restores the subscription', async () => {
    const { orgId, subscriptionId, invoiceId } = await billedSubscription();
    await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect(await statusOf(orgId, subscriptionId)).toBe('past_due');
    await database.db.transaction((tx) =>
      withdrawInvoice(tx, { invoiceId, now: at('2026-03-04T12:00:00Z') }),
    );
    expect(await statusOf(orgId, subscriptionId)).toBe('active');
  });

  it('a billing run brings back a past_due subscription with nothing overdue left', async () => {
    // docs/decisions.md, "Dunning is derived from invoices": each run moves subscriptions both ways
    const { orgId, subscriptionId, invoiceId } = await billedSubscription();
    await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect(await statusOf(orgId, subscriptionId)).toBe('past_due');
    // settled by hand: payments, credit memos and withdrawals restore at once, so the run's own
    // way back is seen only on a state set outside them
    await settleByHand(orgId, invoiceId);
    const run = await runBilling(database.db, { usage, orgId, now: at('2026-03-04T01:00:00Z') });
    expect(run.back_to_active).toBe(1);
    expect(await statusOf(orgId, subscriptionId)).toBe('active');
  });

  it('a partly paid invoice past its due date makes the subscription past due too', async () => {
    const { orgId, subscriptionId, invoiceId } = await billedSubscription();
    await database.db.transaction((tx) =>
      recordPayment(tx, { invoiceId, amount: '5.00', now: at('2026-03-01T12:00:00Z') }),
    );
    expect((await getInvoice(database.db, orgId, invoiceId)).status).toBe('PARTIALLY_PAID');
    const run = await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect(run.marked_past_due).toBe(1);
    expect(await statusOf(orgId, subscriptionId)).toBe('past_due');
    // the rest paid: active again
    await database.db.transaction((tx) =>
      recordPayment(tx, { invoiceId, amount: '6.30', now: at('2026-03-04T12:00:00Z') }),
    );
    expect(await statusOf(orgId, subscriptionId)).toBe('active');
  });

  it('a refunded invoice with a balance is not overdue until paid again in part (docs/decisions.md)', async () => {
    const { orgId, subscriptionId, invoiceId } = await billedSubscription();
    await database.db.transaction((tx) =>
      recordPayment(tx, { invoiceId, amount: '5.00', now: at('2026-03-01T12:00:00Z') }),
    );
    await database.db.transaction((tx) =>
      createRefund(tx, { invoiceId, amount: '2.00', now: at('2026-03-02T12:00:00Z') }),
    );
    expect(await getInvoice(database.db, orgId, invoiceId)).toMatchObject({
      status: 'PARTIALLY_REFUNDED',
      balance: '6.30000000',
    });
    const run = await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect(run.marked_past_due).toBe(0);
    expect(await statusOf(orgId, subscriptionId)).toBe('active');
    // paid again in part: PARTIALLY_PAID past its due date, overdue like any other
    await database.db.transaction((tx) =>
      recordPayment(tx, { invoiceId, amount: '1.00', now: at('2026-03-04T12:00:00Z') }),
    );
    const again = await runBilling(database.db, { usage, orgId, now: at('2026-03-05T00:00:00Z') });
    expect(again.marked_past_due).toBe(1);
  });

  it('a scoped run or a payment moves its own subscriptions only, not others of the organization', async () => {
    // restoreIfSettled moves the subscription of the invoice paid; the others wait for a run
    const { orgId } = await createTestOrg(database.db);
    const { seats } = await basicCatalog(database.db, orgId);
    const customerId = await customerIn(database.db, orgId);
    const subscriptionIds: number[] = [];
    for (let n = 0; n < 2; n++) {
      const subscription = await subscribe(database.db, orgId, {
        customer_id: customerId,
        items: [{ product_id: seats }],
        start_date: at('2026-01-01T00:00:00Z'),
      });
      subscriptionIds.push(subscription.id);
    }
    const billed = await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
    expect(billed.invoice_ids).toHaveLength(2);
    const [paidOne, other] = subscriptionIds as [number, number];
    // a run for some subscriptions moves those only
    const scoped = await runBilling(database.db, {
      usage,
      orgId,
      subscriptionIds: [paidOne],
      now: at('2026-03-04T00:00:00Z'),
    });
    expect(scoped.marked_past_due).toBe(1);
    expect([await statusOf(orgId, paidOne), await statusOf(orgId, other)]).toEqual(['past_due', 'active']);
    await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect([await statusOf(orgId, paidOne), await statusOf(orgId, other)]).toEqual(['past_due', 'past_due']);
    const invoiceOf = async (subscriptionId: number) =>
      (
        await database.db.query<{ id: string }>(
          `SELECT id FROM invoices WHERE org_id = $1 AND subscription_id = $2 AND due_date = '2026-03-03'`,
          [orgId, subscriptionId],
        )
      ).rows[0]!.id;
    await settleByHand(orgId, await invoiceOf(other));
    await database.db.transaction(async (tx) =>
      recordPayment(tx, {
        invoiceId: await invoiceOf(paidOne),
        amount: '11.30',
        now: at('2026-03-04T12:00:00Z'),
      }),
    );
    expect([await statusOf(orgId, paidOne), await statusOf(orgId, other)]).toEqual(['active', 'past_due']);
    const run = await runBilling(database.db, { usage, orgId, now: at('2026-03-04T13:00:00Z') });
    expect(run.back_to_active).toBe(1);
    expect(await statusOf(orgId, other)).toBe('active');
  });

  it('a billing run brings an unpaid subscription with nothing overdue back to active as well', async () => {
    const { orgId, subscriptionId, invoiceId } = await billedSubscription();
    await database.db.query(`UPDATE subscriptions SET status = 'unpaid' WHERE org_id = $1 AND id = $2`, [
      orgId,
      subscriptionId,
    ]);
    await settleByHand(orgId, invoiceId);
    const run = await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect(run.back_to_active).toBe(1);
    expect(await statusOf(orgId, subscriptionId)).toBe('active');
  });

  it('only an active subscription becomes past due; paying makes an unpaid one active again', async () => {
    // the subscription state machine has no move from unpaid to past_due (docs/architecture.md);
    // all that is overdue paid, unpaid goes back to active
    const { orgId, subscriptionId, invoiceId } = await billedSubscription();
    await database.db.query(`UPDATE subscriptions SET status = 'unpaid' WHERE org_id = $1 AND id = $2`, [
      orgId,
      subscriptionId,
    ]);
    const run = await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect([run.marked_past_due, run.back_to_active]).toEqual([0, 0]);
    expect(await statusOf(orgId, subscriptionId)).toBe('unpaid');
    await database.db.transaction((tx) =>
      recordPayment(tx, { invoiceId, amount: '11.30', now: at('2026-03-04T12:00:00Z') }),
    );
    expect(await statusOf(orgId, subscriptionId)).toBe('active');
  });

  it('an invoice past its due date with nothing left owed is not overdue, whatever its status says', async () => {
    // overdue needs a balance left (docs/architecture.md, "Rules of the contract"): total = amount_paid is none
    const { orgId, subscriptionId, invoiceId } = await billedSubscription();
    await database.db.query(`UPDATE invoices SET amount_paid = total WHERE org_id = $1 AND id = $2`, [
      orgId,
      invoiceId,
    ]);
    expect((await getInvoice(database.db, orgId, invoiceId)).status).toBe('POSTED');
    const run = await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect(run.marked_past_due).toBe(0);
    expect(await statusOf(orgId, subscriptionId)).toBe('active');
  });
});
