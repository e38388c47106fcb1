import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCustomerCredit, runBilling, type UsageForTransaction } from '../../libs/billing/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { cancelSubscription, changeSubscription, getSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { inProcessConsole } from '../helpers/console.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { eventually } from '../usage/support.js';
import {
  basicCatalog,
  creditBalance,
  customerIn,
  expectPayableInvoices,
  invoicesOf,
  outbox,
  productIn,
  recordUsage,
  subscribe,
} from './fixtures.js';

/*
 * A cancel now bills the used part of the running period (docs/decisions.md, "An immediate cancel
 * bills the used part of its period"): usage until the cancel, the proration lines changes left
 * waiting, licensed items to the second (or the whole period with proration none), posted at once
 * with invoice.posted. March 2026 has 31 days; Desks cost 31.00 a month, so a day is 1.00 each.
 * The customer is in Ontario (HST 13 %). API calls: 1-100 at 1.00, beyond at 0.50 (graduated).
 */

let database: TestDatabase;
let env: Record<string, string>;
const console = inProcessConsole(() => env);
const usage: UsageForTransaction = (tx) => new PostgresUsageAggregator(tx);

beforeAll(async () => {
  database = await createTestDatabase('cancel_now');
  env = {
    DATABASE_URL: database.url,
    LOG_LEVEL: 'silent',
    PORT: '8080',
    HOST: '127.0.0.1',
    CLICKHOUSE_URL: '',
  };
});
afterAll(() => database.drop());

const at = (iso: string) => new Date(iso);

/** Desks x2 and API calls from Mar 1; on Mar 11 a third desk (prorated: -42.00, +63.00). */
async function upgradedWithUsage() {
  const { orgId } = await createTestOrg(database.db);
  const { apiCalls } = await basicCatalog(database.db, orgId);
  const desks = await productIn(database.db, orgId, {
    name: 'Desks',
    unit_price: '31.00',
    pricing_type: 'recurring',
    currency: 'CAD',
  });
  const customerId = await customerIn(database.db, orgId);
  const subscription = await subscribe(
    database.db,
    orgId,
    {
      customer_id: customerId,
      items: [{ product_id: desks, quantity: 2 }, { product_id: apiCalls }],
      start_date: at('2026-03-01T00:00:00Z'),
    },
    at('2026-03-01T00:00:00Z'),
  );
  const [desk, calls] = subscription.items;
  const upgraded = await changeSubscription(database.db, {
    subscriptionId: subscription.id,
    orgId,
    change: { items: [{ id: desk!.id, quantity: 3 }, { id: calls!.id }] },
    now: at('2026-03-11T00:00:00Z'),
  });
  expect(upgraded.proration_lines.map((line) => line.amount)).toEqual(['-42.00000000', '63.00000000']);
  await recordUsage(database.db, orgId, calls!.id, '150', '2026-03-05T00:00:00Z');
  await recordUsage(database.db, orgId, calls!.id, '7', '2026-03-16T23:59:59Z'); // the last second before
  await recordUsage(database.db, orgId, calls!.id, '1000', '2026-03-17T00:00:00Z'); // at the cancel: after it
  return { orgId, customerId, subscription };
}

async function lines(orgId: number, invoiceId: string) {
  const invoice = await getInvoice(database.db, orgId, invoiceId);
  return {
    lines: invoice.items.map((item) => [item.description, item.line_total_pre_tax]),
    period: [invoice.period_start, invoice.period_end],
    subtotal: (
      await database.db.query<{ subtotal: string }>('SELECT subtotal::text FROM invoices WHERE id = $1', [
        invoiceId,
      ])
    ).rows[0]!.subtotal,
    tax: invoice.tax_amount,
    total: invoice.total,
    status: invoice.status,
  };
}

describe('cancel now', () => {
  it('invoices the used part of the period: usage until then, waiting lines, licensed to the second', async () => {
    const { orgId, customerId, subscription } = await upgradedWithUsage();
    const result = await console(
      'subscription',
      'cancel',
      '--id',
      String(subscription.id),
      '--now',
      '2026-03-17T00:00:00Z',
    );
    expect(result.code, result.stderr).toBe(0);
    const printed = result.json();
    expect(printed).toMatchObject({
      id: subscription.id,
      status: 'canceled',
      ended_at: '2026-03-17T00:00:00.000Z',
    });

    // 3 desks for the 15 days left: -45.00; licensed 62 - 42 + 63 - 45 = 38.00 (2 x 10 days + 3 x 6 days)
    // usage until Mar 17: 157 calls = 100 x 1.00 + 57 x 0.50 = 128.50; subtotal 166.50, HST 21.645 -> 21.65
    expect(await lines(orgId, printed.final_invoice_id)).toEqual({
      lines: [
        ['Desks', '62.00000000'],
        ['API calls (usage: 157 calls)', '128.50000000'],
        ['Unused time on 2 x Desks, 2026-03-11 to 2026-03-31', '-42.00000000'],
        ['Remaining time on 3 x Desks, 2026-03-11 to 2026-03-31', '63.00000000'],
        ['Unused time on 3 x Desks, 2026-03-17 to 2026-03-31', '-45.00000000'],
      ],
      period: ['2026-03-01', '2026-03-16'],
      subtotal: '166.50000000',
      tax: '21.65000000',
      total: '188.15000000',
      status: 'POSTED',
    });
    const posted = await outbox(database.db, orgId, 'invoice.posted');
    expect(posted.map((event) => event.data)).toEqual([
      expect.objectContaining({
        id: printed.final_invoice_id,
        customer_id: customerId,
        total: '188.15000000',
      }),
    ]);
    expect(await outbox(database.db, orgId, 'subscription.canceled')).toHaveLength(1);
    // the lines were carried once: nothing waits any more, and no run bills the subscription again
    const { rows } = await database.db.query(
      'SELECT 1 FROM subscription_proration_lines WHERE subscription_id = $1 AND invoice_id IS NULL',
      [subscription.id],
    );
    expect(rows).toEqual([]);
    await runBilling(database.db, { usage, orgId, now: at('2026-06-01T00:00:00Z') });
    expect(await invoicesOf(database.db, subscription.id)).toHaveLength(1);
    // the canceled subscription still shows what it had
    expect((await getSubscription(database.db, orgId, subscription.id)).items.map((i) => i.quantity)).toEqual(
      [3, 1],
    );
    await expectPayableInvoices(database.db, orgId);
  });

  it('with proration none: the licensed items for the whole period, usage still until the cancel', async () => {
    const { orgId, subscription } = await upgradedWithUsage();
    const canceled = await database.db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        finalInvoice: { proration: 'none' },
        now: at('2026-03-17T00:00:00Z'),
      }),
    );
    // 62 - 42 + 63 = 83.00 + 128.50 = 211.50; HST 27.495 -> 27.50
    expect(await lines(orgId, canceled.final_invoice_id!)).toMatchObject({
      subtotal: '211.50000000',
      tax: '27.50000000',
      total: '239.00000000',
    });
  });

  it('mid-day: the invoice ends on the cancel day, credits to the second', async () => {
    const { orgId } = await createTestOrg(database.db);
    const desks = await productIn(database.db, orgId, {
      name: 'Desks',
      unit_price: '31.00',
      pricing_type: 'recurring',
      currency: 'CAD',
    });
    const customerId = await customerIn(database.db, orgId);
    const subscription = await subscribe(
      database.db,
      orgId,
      { customer_id: customerId, items: [{ product_id: desks }], start_date: at('2026-03-01T00:00:00Z') },
      at('2026-03-01T00:00:00Z'),
    );
    const canceled = await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, now: at('2026-03-16T12:00:00Z') }),
    );
    // 15.5 days used: 31.00 - 15.50
    expect(await lines(orgId, canceled.final_invoice_id!)).toMatchObject({
      lines: [
        ['Desks', '31.00000000'],
        ['Unused time on 1 x Desks, 2026-03-16 to 2026-03-31', '-15.50000000'],
      ],
      period: ['2026-03-01', '2026-03-16'],
      subtotal: '15.50000000',
    });
  });

  it("consumes the customer's credit like any posting; paid in full emits invoice.paid", async () => {
    const { orgId, customerId, subscription } = await upgradedWithUsage();
    await database.db.transaction((tx) => addCustomerCredit(tx, { orgId, customerId, amount: '500.00' }));
    const canceled = await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, now: at('2026-03-17T00:00:00Z') }),
    );
    expect(await lines(orgId, canceled.final_invoice_id!)).toMatchObject({
      total: '188.15000000',
      status: 'PAID',
    });
    expect((await outbox(database.db, orgId, 'invoice.paid')).map((e) => e.data.id)).toEqual([
      canceled.final_invoice_id,
    ]);
    expect(await creditBalance(database.db, customerId)).toBe('311.85000000');
  });

  it("posts the final invoice at once though the organization's period invoices wait a grace", async () => {
    const { orgId, subscription } = await upgradedWithUsage();
    await database.db.query('UPDATE organizations SET invoice_grace_hours = 24 WHERE id = $1', [orgId]);
    const canceled = await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, now: at('2026-03-17T00:00:00Z') }),
    );
    // nothing of the subscription is billed later: a draft waiting for its grace would be its last word
    expect(await lines(orgId, canceled.final_invoice_id!)).toMatchObject({
      total: '188.15000000',
      status: 'POSTED',
    });
    const { rows } = await database.db.query<{ post_at: Date | null }>(
      'SELECT post_at FROM invoices WHERE id = $1',
      [canceled.final_invoice_id],
    );
    expect(rows[0]!.post_at).toBeNull();
  });

  it('canceled in the first paid period after a trial: the one-time items are on the final invoice', async () => {
    const { orgId } = await createTestOrg(database.db);
    const { seats } = await basicCatalog(database.db, orgId);
    const setup = await productIn(database.db, orgId, {
      name: 'Setup',
      unit_price: '99',
      pricing_type: 'one_time',
    });
    const customerId = await customerIn(database.db, orgId);
    const subscription = await subscribe(
      database.db,
      orgId,
      {
        customer_id: customerId,
        items: [{ product_id: seats }, { product_id: setup }],
        trial_days: 14,
        start_date: at('2026-03-01T00:00:00Z'),
      },
      at('2026-03-01T00:00:00Z'),
    );
    // the trial ends Mar 15: the first paid period begins then, nothing is invoiced for the trial
    const trialEnd = await runBilling(database.db, { usage, orgId, now: at('2026-03-15T00:00:00Z') });
    expect(trialEnd.trials_ended).toBe(1);
    const canceled = await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, now: at('2026-03-20T00:00:00Z') }),
    );
    const final = await lines(orgId, canceled.final_invoice_id!);
    expect(final.lines.map(([description]) => description)).toContain('Setup');
  });

  it('nothing to bill: a trial, or the first instant of a period just invoiced', async () => {
    const { orgId } = await createTestOrg(database.db);
    const { seats } = await basicCatalog(database.db, orgId);
    const customerId = await customerIn(database.db, orgId);
    const trialing = await subscribe(
      database.db,
      orgId,
      {
        customer_id: customerId,
        items: [{ product_id: seats }],
        trial_days: 14,
        start_date: at('2026-03-01T00:00:00Z'),
      },
      at('2026-03-01T00:00:00Z'),
    );
    const fromTrial = await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: trialing.id, now: at('2026-03-05T00:00:00Z') }),
    );
    expect(fromTrial.final_invoice_id).toBeUndefined();
    expect(await invoicesOf(database.db, trialing.id)).toEqual([]);

    const running = await subscribe(
      database.db,
      orgId,
      { customer_id: customerId, items: [{ product_id: seats }], start_date: at('2026-03-01T00:00:00Z') },
      at('2026-03-01T00:00:00Z'),
    );
    await runBilling(database.db, { usage, orgId, now: at('2026-04-01T00:00:00Z') });
    const atBoundary = await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: running.id, now: at('2026-04-01T00:00:00Z') }),
    );
    expect(atBoundary.final_invoice_id).toBeUndefined();
    expect((await invoicesOf(database.db, running.id)).map((i) => i.period_start)).toEqual(['2026-03-01']);
  });

  it('without invoicing bills nothing; at period end leaves the running period to the run', async () => {
    const { subscription } = await upgradedWithUsage();
    const ended = await database.db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        withoutInvoicing: true,
        now: at('2026-03-17T00:00:00Z'),
      }),
    );
    expect(ended.final_invoice_id).toBeUndefined();
    expect(await invoicesOf(database.db, subscription.id)).toEqual([]);

    const other = await upgradedWithUsage();
    const marked = await database.db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: other.subscription.id,
        atPeriodEnd: true,
        now: at('2026-03-17T00:00:00Z'),
      }),
    );
    expect(marked.final_invoice_id).toBeUndefined();
    await runBilling(database.db, { usage, orgId: other.orgId, now: at('2026-04-01T00:00:00Z') });
    // the whole period: 62 - 42 + 63 = 83.00, usage 1,157 calls = 100 + 528.50 = 628.50; HST 92.495 -> 92.50
    expect((await invoicesOf(database.db, other.subscription.id)).map((i) => i.total)).toEqual([
      '804.00000000',
    ]);
  });

  it('refuses a cancel at a period end not invoiced yet, a second cancel at period end, and both ways at once', async () => {
    const { subscription } = await upgradedWithUsage();
    const cancel = (options: { atPeriodEnd?: boolean; withoutInvoicing?: boolean }, now: string) =>
      database.db.transaction((tx) =>
        cancelSubscription(tx, { subscriptionId: subscription.id, ...options, now: at(now) }),
      );
    // March ends at Apr 1 00:00: from that instant it must be invoiced before the cancel is recorded
    await expect(cancel({}, '2026-04-01T00:00:00Z')).rejects.toMatchObject({ status: 409 });
    await expect(
      cancel({ atPeriodEnd: true, withoutInvoicing: true }, '2026-03-17T00:00:00Z'),
    ).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [expect.objectContaining({ field: 'without_invoicing' })],
    });
    expect((await cancel({ atPeriodEnd: true }, '2026-03-17T00:00:00Z')).cancel_at_period_end).toBe(true);
    await expect(cancel({ atPeriodEnd: true }, '2026-03-18T00:00:00Z')).rejects.toMatchObject({
      status: 409,
    });
    expect(await invoicesOf(database.db, subscription.id)).toEqual([]);
  });

  it('an unpaid subscription canceled now still gets its final invoice for the used part', async () => {
    const { subscription } = await upgradedWithUsage();
    await database.db.query(`UPDATE subscriptions SET status = 'unpaid' WHERE id = $1`, [subscription.id]);
    const ended = await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, now: at('2026-03-17T00:00:00Z') }),
    );
    expect(ended.status).toBe('canceled');
    expect(ended.final_invoice_id).toBeDefined();
    expect((await invoicesOf(database.db, subscription.id)).map((invoice) => invoice.id)).toEqual([
      ended.final_invoice_id,
    ]);
  });

  it('refuses a proration with a cancel at the period end', async () => {
    const { subscription } = await upgradedWithUsage();
    await expect(
      database.db.transaction((tx) =>
        cancelSubscription(tx, {
          subscriptionId: subscription.id,
          atPeriodEnd: true,
          finalInvoice: { proration: 'none' },
          now: at('2026-03-17T00:00:00Z'),
        }),
      ),
    ).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [expect.objectContaining({ field: 'proration' })],
    });
  });

  it('a second cancel now waits for the first to commit and is refused: one final invoice, one event', async () => {
    const { orgId, subscription } = await upgradedWithUsage();
    const cancelNow = (tx: Parameters<typeof cancelSubscription>[0]) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, orgId, now: at('2026-03-17T00:00:00Z') });
    // the first cancel holds the subscription's row, not committed yet
    const client = await database.db.pool.connect();
    try {
      await client.query('BEGIN');
      const first = await cancelNow(client);
      const second = database.db.transaction((tx) => cancelNow(tx));
      second.catch(() => {});
      // the second waits on the first's lock: had it read the row unlocked, it would bill the period again
      await eventually(async () => {
        const { rows } = await database.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        expect(rows[0]!.n).toBeGreaterThan(0);
      });
      await client.query('COMMIT');
      await expect(second).rejects.toMatchObject({
        code: 'CONFLICT',
        message: `Subscription ${subscription.id} is canceled and cannot become canceled (canceled is final).`,
      });
      expect((await invoicesOf(database.db, subscription.id)).map((invoice) => invoice.id)).toEqual([
        first.final_invoice_id,
      ]);
    } finally {
      client.release();
    }
    const canceled = (await outbox(database.db, orgId, 'subscription.canceled')).filter(
      (event) => event.data.id === subscription.id,
    );
    expect(canceled).toHaveLength(1);
  });
});
