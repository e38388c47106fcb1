import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  addCustomerCredit,
  postInvoice,
  recordPayment,
  runBilling,
  type UsageForTransaction,
  usageSource,
} from '../../libs/billing/index.js';
import { Database } from '../../libs/db/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { cancelSubscription, getSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  basicCatalog,
  creditBalance,
  customerIn,
  invoicesOf,
  orgWithCatalog,
  outbox,
  productIn,
  recordUsage,
  subscribe,
} from './fixtures.js';

let database: TestDatabase;
let usage: UsageForTransaction;

beforeAll(async () => {
  database = await createTestDatabase('billing_run');
  usage = usageSource(new PostgresUsageAggregator(database.db));
});
afterAll(() => database.drop());

const at = (iso: string) => new Date(iso);

/** A subscription of one unit of `productId`, from `start`, created at `createdAt` (default subscribe's). */
function subscribeFrom(
  orgId: number,
  customerId: number,
  productId: number,
  start: string,
  createdAt?: string,
) {
  return subscribe(
    database.db,
    orgId,
    { customer_id: customerId, items: [{ product_id: productId }], start_date: at(start) },
    createdAt ? at(createdAt) : undefined,
  );
}

describe('billing run', () => {
  it('invoices an ended period: licensed items, metered usage above included units on tiers, tax, posted', async () => {
    const { orgId, customerId, seats, apiCalls } = await orgWithCatalog(database.db);
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [
        { product_id: seats, quantity: 2 },
        { product_id: apiCalls, included_units: '50' },
      ],
      start_date: at('2026-01-31T00:00:00Z'),
    });
    const metered = subscription.items.find((item) => item.usage_type === 'metered')!;
    await recordUsage(database.db, orgId, metered.id, '120', '2026-01-31T00:00:00Z'); // first instant: in
    await recordUsage(database.db, orgId, metered.id, '180', '2026-02-27T23:59:59Z');
    await recordUsage(database.db, orgId, metered.id, '999', '2026-02-28T00:00:00Z'); // next period

    const first = await runBilling(database.db, { usage, orgId, now: at('2026-02-28T00:00:00Z') });
    expect(first).toMatchObject({ invoices_created: 1, subscriptions_processed: 1, failures: [] });

    const invoice = await getInvoice(database.db, orgId, first.invoice_ids[0]!);
    expect(invoice).toMatchObject({
      invoice_number: 'INV-000001',
      customer_id: customerId,
      subscription_id: subscription.id,
      status: 'POSTED',
      invoice_date: '2026-02-28',
      period_start: '2026-01-31',
      period_end: '2026-02-27',
      due_date: '2026-03-30',
      // 2 x 10.00 + (300 - 50 included = 250 calls: 100 x 1.00 + 150 x 0.50 = 175.00); HST 13 %
      tax_amount: '25.35000000',
      total: '220.35000000',
      amount_paid: '0.00000000',
      balance: '220.35000000',
      currency: 'CAD',
    });
    expect(invoice.items.map((i) => [i.description, i.quantity, i.line_total_pre_tax, i.tax_type])).toEqual([
      ['Seats', '2.0000', '20.00000000', 'HST'],
      ['API calls (usage: 300 calls, 50 included)', '250.0000', '175.00000000', 'HST'],
    ]);

    const next = await getSubscription(database.db, orgId, subscription.id);
    expect(next.current_period_start).toBe('2026-02-28T00:00:00.000Z');
    expect(next.next_billing_date).toBe('2026-03-31T00:00:00.000Z');

    const posted = await outbox(database.db, orgId, 'invoice.posted');
    expect(posted.map((e) => e.data)).toEqual([
      {
        id: invoice.id,
        object: 'invoice',
        customer_id: customerId,
        status: 'POSTED',
        invoice_number: 'INV-000001',
        total: '220.35000000',
        balance: '220.35000000',
        currency: 'CAD',
      },
    ]);

    // the same run again, or later the same day: nothing more is due
    const again = await runBilling(database.db, { usage, orgId, now: at('2026-02-28T12:00:00Z') });
    expect(again.invoices_created).toBe(0);
    expect(await invoicesOf(database.db, subscription.id)).toHaveLength(1);
  });

  it('a run skips a subscription another transaction holds instead of waiting for it; the next run bills it', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const held = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: at('2026-01-01T00:00:00Z'),
    });
    const free = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: at('2026-01-01T00:00:00Z'),
    });
    const client = await database.db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT id FROM subscriptions WHERE id = $1 FOR NO KEY UPDATE', [held.id]);
      const run = runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
      const waited = new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 5_000).unref());
      const first = await Promise.race([run, waited]);
      expect(first).not.toBe('waited');
      expect((await invoicesOf(database.db, free.id)).length).toBe(1);
      expect(await invoicesOf(database.db, held.id)).toEqual([]);
      await client.query('COMMIT');
    } finally {
      await client.query('ROLLBACK').catch(() => {}); // a failed expectation must not leave the row held
      client.release();
    }
    const next = await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
    expect(next.invoices_created).toBe(1);
    expect(await invoicesOf(database.db, held.id)).toHaveLength(1);
  });

  it('two runs at once on separate pools bill every period exactly once, with gapless numbers', async () => {
    const orgs = [await orgWithCatalog(database.db), await orgWithCatalog(database.db)];
    const subscriptionIds: number[] = [];
    for (const org of orgs) {
      for (let i = 0; i < 15; i++) {
        const subscription = await subscribe(database.db, org.orgId, {
          customer_id: org.customerId,
          items: [{ product_id: org.seats, quantity: 1 + i }],
          start_date: at('2026-01-01T00:00:00Z'),
        });
        subscriptionIds.push(subscription.id);
      }
    }
    const one = new Database(database.url, { poolSize: 2 });
    const two = new Database(database.url, { poolSize: 2 });
    try {
      // three monthly periods are due for each of the 30 subscriptions
      const options = { usage, now: at('2026-04-01T00:00:00Z'), subscriptionIds, batchSize: 4 };
      const [a, b] = await Promise.all([runBilling(one, options), runBilling(two, options)]);
      expect(a.invoices_created + b.invoices_created).toBe(90);
      expect(new Set([...a.invoice_ids, ...b.invoice_ids]).size).toBe(90);
      expect(a.failures).toEqual([]);
      expect(b.failures).toEqual([]);
    } finally {
      await one.close();
      await two.close();
    }
    const { rows } = await database.db.query<{ org_id: number; numbers: string[]; periods: number }>(
      `SELECT org_id, array_agg(invoice_number ORDER BY invoice_number) AS numbers,
              count(DISTINCT (subscription_id, period_start))::int AS periods
         FROM invoices WHERE subscription_id = ANY($1) GROUP BY org_id ORDER BY org_id`,
      [subscriptionIds],
    );
    const expected = Array.from({ length: 45 }, (_, i) => `INV-${String(i + 1).padStart(6, '0')}`);
    expect(rows.map((r) => [r.numbers, r.periods])).toEqual([
      [expected, 45],
      [expected, 45],
    ]);
    for (const org of orgs) expect(await outbox(database.db, org.orgId, 'invoice.posted')).toHaveLength(45);
    const again = await runBilling(database.db, { usage, now: at('2026-04-01T00:00:00Z'), subscriptionIds });
    expect(again.invoices_created).toBe(0);
  });

  it("bills each organization's usage when one batch holds several organizations' periods alike", async () => {
    const orgs = [await orgWithCatalog(database.db), await orgWithCatalog(database.db)];
    const subscriptions = [];
    for (const [index, org] of orgs.entries()) {
      const subscription = await subscribeFrom(
        org.orgId,
        org.customerId,
        org.apiCalls,
        '2026-01-01T00:00:00Z',
      );
      // the same window in both organizations: usage totals are still read per organization
      await recordUsage(
        database.db,
        org.orgId,
        subscription.items[0]!.id,
        String(10 * (index + 1)),
        '2026-01-10T00:00:00Z',
      );
      subscriptions.push(subscription);
    }
    const summary = await runBilling(database.db, {
      usage,
      now: at('2026-02-01T00:00:00Z'),
      subscriptionIds: subscriptions.map((subscription) => subscription.id),
    });
    expect(summary.invoices_created).toBe(2);
    // 10 and 20 calls at 1.00, HST 13 %
    const totals = await Promise.all(
      subscriptions.map(async (s) => (await invoicesOf(database.db, s.id))[0]!.total),
    );
    expect(totals).toEqual(['11.30000000', '22.60000000']);
  });

  it('skips a subscription another run holds, without waiting for it or billing it twice', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: at('2026-01-01T00:00:00Z'),
    });
    const holder = new Database(database.url, { poolSize: 1 });
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = () => {};
    const holding = new Promise<void>((resolve) => {
      held = resolve;
    });
    // a batch of another run in flight: the row claimed as a claim locks it, its commit still to come
    const inFlight = holder.transaction(async (tx) => {
      await tx.query('SELECT id FROM subscriptions WHERE id = $1 FOR NO KEY UPDATE', [subscription.id]);
      held();
      await released;
    });
    try {
      await holding;
      const options = { usage, now: at('2026-02-01T00:00:00Z'), subscriptionIds: [subscription.id] };
      const run = runBilling(database.db, options);
      const outcome = await Promise.race([
        run,
        new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 5000)),
      ]);
      release();
      await inFlight;
      expect(outcome === 'waited' ? await run : outcome).toMatchObject({ invoices_created: 0 });
      expect(outcome).not.toBe('waited');
    } finally {
      release();
      await inFlight.catch(() => {});
      await holder.close();
    }
    expect(
      (
        await runBilling(database.db, {
          usage,
          now: at('2026-02-01T00:00:00Z'),
          subscriptionIds: [subscription.id],
        })
      ).invoices_created,
    ).toBe(1);
  });

  it('never charges a trial: the first invoice covers the first paid period, from the trial end', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      trial_days: 14,
      start_date: at('2026-01-01T00:00:00Z'),
    });
    expect(subscription.status).toBe('trialing');
    expect(subscription.trial_end_date).toBe('2026-01-15T00:00:00.000Z');

    const trialOver = await runBilling(database.db, { usage, orgId, now: at('2026-01-20T00:00:00Z') });
    expect(trialOver).toMatchObject({ invoices_created: 0, trials_ended: 1 });
    const active = await getSubscription(database.db, orgId, subscription.id);
    expect(active).toMatchObject({
      status: 'active',
      current_period_start: '2026-01-15T00:00:00.000Z',
      next_billing_date: '2026-02-15T00:00:00.000Z',
    });

    await runBilling(database.db, { usage, orgId, now: at('2026-02-15T00:00:00Z') });
    expect(await invoicesOf(database.db, subscription.id)).toMatchObject([
      { period_start: '2026-01-15', period_end: '2026-02-14', total: '11.30000000' },
    ]);
  });

  it('bills usage on the invoice whose dates hold it, whatever time of day the subscription started', async () => {
    const { orgId, customerId, apiCalls } = await orgWithCatalog(database.db);
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: apiCalls }],
      start_date: at('2026-01-15T10:00:00Z'),
    });
    const metered = subscription.items[0]!;
    await recordUsage(database.db, orgId, metered.id, '7', '2026-02-14T23:00:00Z');
    await recordUsage(database.db, orgId, metered.id, '100', '2026-02-15T05:00:00Z');
    await runBilling(database.db, { usage, orgId, now: at('2026-03-16T00:00:00Z') });
    const { rows } = await database.db.query<{ period_start: string; period_end: string; quantity: string }>(
      `SELECT to_char(i.period_start, 'YYYY-MM-DD') AS period_start, to_char(i.period_end, 'YYYY-MM-DD') AS period_end,
              it.quantity
         FROM invoices i JOIN invoice_items it ON it.invoice_id = i.id
        WHERE i.subscription_id = $1 ORDER BY i.period_start`,
      [subscription.id],
    );
    expect(rows).toEqual([
      { period_start: '2026-01-15', period_end: '2026-02-14', quantity: '7.0000' },
      { period_start: '2026-02-15', period_end: '2026-03-14', quantity: '100.0000' },
    ]);
  });

  it("credit is in the organization's currency: a USD invoice of a CAD organization does not use it", async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const { seats: usdSeats } = await basicCatalog(database.db, orgId, 'USD');
    await addCustomerCredit(database.db, { customerId, amount: '100' });
    await subscribeFrom(orgId, customerId, usdSeats, '2026-01-01T00:00:00Z');
    await subscribeFrom(orgId, customerId, seats, '2026-01-01T00:00:00Z');
    await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
    const { rows } = await database.db.query<{ currency: string; status: string; amount_paid: string }>(
      `SELECT trim(currency) AS currency, status, amount_paid FROM invoices WHERE org_id = $1 ORDER BY currency`,
      [orgId],
    );
    expect(rows.map((r) => [r.currency, r.status, r.amount_paid])).toEqual([
      ['CAD', 'PAID', '11.30000000'],
      ['USD', 'POSTED', '0.00000000'],
    ]);
    expect(await creditBalance(database.db, customerId)).toBe('88.70000000');

    // posting a USD draft later leaves the credit alone too
    await runBilling(database.db, { usage, orgId, post: false, now: at('2026-03-01T00:00:00Z') });
    const drafts = await database.db.query<{ id: string; currency: string }>(
      `SELECT id, trim(currency) AS currency FROM invoices WHERE org_id = $1 AND status = 'DRAFT'`,
      [orgId],
    );
    const usdDraft = drafts.rows.find((row) => row.currency === 'USD')!;
    const posted = await database.db.transaction((tx) => postInvoice(tx, { invoiceId: usdDraft.id }));
    expect(posted).toMatchObject({ status: 'POSTED', amount_paid: '0.00000000' });
    expect(await creditBalance(database.db, customerId)).toBe('88.70000000');
  });

  it("posting consumes the customer's credit balance as a CREDIT_MEMO", async () => {
    const { orgId, seats } = await orgWithCatalog(database.db);
    const partly = await customerIn(database.db, orgId, { name: 'Partly Credited' });
    const fully = await customerIn(database.db, orgId, { name: 'Fully Credited' });
    await addCustomerCredit(database.db, { customerId: partly, amount: '5' });
    await addCustomerCredit(database.db, { customerId: fully, amount: '100' });
    for (const customer of [partly, fully]) {
      await subscribeFrom(orgId, customer, seats, '2026-01-01T00:00:00Z');
    }
    const run = await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
    expect(run.invoices_created).toBe(2);

    const { rows } = await database.db.query(
      `SELECT i.customer_id, i.status, i.amount_paid, (i.total - i.amount_paid)::text AS balance,
              (SELECT coalesce(sum(g.remaining), 0)::numeric(20, 8) FROM credit_grants g WHERE g.customer_id = c.id AND g.status = 'ACTIVE') AS credit_balance, t.type, t.amount, t.status AS tx_status
         FROM invoices i JOIN customers c ON c.id = i.customer_id
         JOIN invoice_transactions t ON t.invoice_id = i.id
        WHERE i.org_id = $1 ORDER BY i.customer_id`,
      [orgId],
    );
    // 10.00 + 13 % HST = 11.30
    expect(rows).toEqual([
      {
        customer_id: partly,
        status: 'PARTIALLY_PAID',
        amount_paid: '5.00000000',
        balance: '6.30000000',
        credit_balance: '0.00000000',
        type: 'CREDIT_MEMO',
        amount: '5.00000000',
        tx_status: 'COMPLETED',
      },
      {
        customer_id: fully,
        status: 'PAID',
        amount_paid: '11.30000000',
        balance: '0.00000000',
        credit_balance: '88.70000000',
        type: 'CREDIT_MEMO',
        amount: '11.30000000',
        tx_status: 'COMPLETED',
      },
    ]);
    const paid = await outbox(database.db, orgId, 'invoice.paid');
    expect(paid.map((e) => [e.data.customer_id, e.data.status, e.data.balance])).toEqual([
      [fully, 'PAID', '0.00000000'],
    ]);
  });

  it('a termed subscription without auto-renew expires after its term; with auto-renew it renews', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const expiring = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      term_type: 'termed',
      initial_term_months: 3,
      auto_renew: false,
      start_date: at('2026-01-01T00:00:00Z'),
    });
    const renewing = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      term_type: 'termed',
      initial_term_months: 3,
      start_date: at('2026-01-01T00:00:00Z'),
    });
    expect(expiring.subscription_end_date).toBe('2026-04-01T00:00:00.000Z');

    const run = await runBilling(database.db, { usage, orgId, now: at('2026-06-15T00:00:00Z') });
    expect(run).toMatchObject({ expired: 1, renewed: 1 });
    expect(await invoicesOf(database.db, expiring.id)).toHaveLength(3);
    expect(await getSubscription(database.db, orgId, expiring.id)).toMatchObject({
      status: 'expired',
      ended_at: '2026-04-01T00:00:00.000Z',
    });
    expect(await invoicesOf(database.db, renewing.id)).toHaveLength(5);
    expect(await getSubscription(database.db, orgId, renewing.id)).toMatchObject({
      // still billed, and behind on payments: its first invoices are overdue by mid-June
      status: 'past_due',
      subscription_end_date: '2026-07-01T00:00:00.000Z',
      next_billing_date: '2026-07-01T00:00:00.000Z',
    });
    // an expired subscription is never billed again
    await runBilling(database.db, { usage, orgId, now: at('2027-01-01T00:00:00Z') });
    expect(await invoicesOf(database.db, expiring.id)).toHaveLength(3);
  });

  it('cancel at period end: the last period is invoiced, then the subscription is canceled (once)', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const subscription = await subscribeFrom(orgId, customerId, seats, '2026-01-10', '2026-01-10');
    const marked = await database.db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        atPeriodEnd: true,
        now: at('2026-01-20T00:00:00Z'),
      }),
    );
    expect(marked).toMatchObject({
      status: 'active',
      cancel_at_period_end: true,
      canceled_at: '2026-01-20T00:00:00.000Z',
    });
    expect(await outbox(database.db, orgId, 'subscription.canceled')).toEqual([]);

    const run = await runBilling(database.db, { usage, orgId, now: at('2026-05-01T00:00:00Z') });
    expect(run).toMatchObject({ invoices_created: 1, canceled: 1 });
    expect(await getSubscription(database.db, orgId, subscription.id)).toMatchObject({
      status: 'canceled',
      ended_at: '2026-02-10T00:00:00.000Z',
    });
    const canceled = await outbox(database.db, orgId, 'subscription.canceled');
    expect(canceled.map((e) => e.data)).toEqual([
      { id: subscription.id, object: 'subscription', customer_id: customerId, status: 'canceled' },
    ]);
  });

  it('cancel now bills the days used at once, then stops billing', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const subscription = await subscribeFrom(orgId, customerId, seats, '2026-01-10', '2026-01-10');
    const canceled = await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, now: at('2026-01-20T00:00:00Z') }),
    );
    expect(canceled).toMatchObject({ status: 'canceled', ended_at: '2026-01-20T00:00:00.000Z' });
    expect(await outbox(database.db, orgId, 'subscription.canceled')).toHaveLength(1);
    // 10 of 31 days at 10.00: 10.00 - 6.77 (21/31 credited) = 3.23; HST 0.4199 -> 0.42
    expect(await invoicesOf(database.db, subscription.id)).toMatchObject([
      { period_start: '2026-01-10', period_end: '2026-01-19', total: '3.65000000', status: 'POSTED' },
    ]);
    await runBilling(database.db, { usage, orgId, now: at('2026-05-01T00:00:00Z') });
    expect(await invoicesOf(database.db, subscription.id)).toHaveLength(1);
  });

  it('cancel refuses to drop a period that ended and is not invoiced yet', async () => {
    // `subscription cancel` bills first, but its run skips a row another run holds (SKIP LOCKED);
    // when that run billed as of an earlier instant, a period may still be open when the lock
    // comes free. Canceling then would lose that period's invoice for good.
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const subscription = await subscribeFrom(orgId, customerId, seats, '2026-01-10', '2026-01-10');
    for (const atPeriodEnd of [false, true]) {
      await expect(
        database.db.transaction((tx) =>
          cancelSubscription(tx, {
            subscriptionId: subscription.id,
            atPeriodEnd,
            now: at('2026-02-15T00:00:00Z'),
          }),
        ),
      ).rejects.toMatchObject({
        code: 'CONFLICT',
        message: expect.stringMatching(/2026-02-10.*not invoiced/),
      });
    }
    expect(await getSubscription(database.db, orgId, subscription.id)).toMatchObject({
      status: 'active',
      cancel_at_period_end: false,
    });
    await runBilling(database.db, { usage, orgId, now: at('2026-02-15T00:00:00Z') });
    await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, now: at('2026-02-15T00:00:00Z') }),
    );
    // the period that ended, then the days of the running one until the cancel
    expect(
      (await invoicesOf(database.db, subscription.id)).map((i) => [i.period_start, i.period_end]),
    ).toEqual([
      ['2026-01-10', '2026-02-09'],
      ['2026-02-10', '2026-02-14'],
    ]);
  });

  it('starts a pending subscription on its start date', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const subscription = await subscribeFrom(orgId, customerId, seats, '2026-03-01', '2026-02-01');
    expect(subscription).toMatchObject({ status: 'pending', next_billing_date: '2026-03-01T00:00:00.000Z' });
    expect(
      (await runBilling(database.db, { usage, orgId, now: at('2026-02-15T00:00:00Z') }))
        .subscriptions_processed,
    ).toBe(0);
    const started = await runBilling(database.db, { usage, orgId, now: at('2026-03-02T00:00:00Z') });
    expect(started).toMatchObject({ subscriptions_started: 1, invoices_created: 0 });
    expect(await getSubscription(database.db, orgId, subscription.id)).toMatchObject({
      status: 'active',
      next_billing_date: '2026-04-01T00:00:00.000Z',
    });
  });

  it('reports its progress at most once a second while it runs, and once at its end', async () => {
    const org = await orgWithCatalog(database.db);
    const subscriptionIds: number[] = [];
    for (let i = 0; i < 5; i++) {
      subscriptionIds.push(
        (await subscribeFrom(org.orgId, org.customerId, org.seats, '2026-01-01T00:00:00Z')).id,
      );
    }
    // each batch's transaction asks for its usage once: 500 ms of the run's clock go by per batch
    let clock = Date.now();
    const spy = vi.spyOn(Date, 'now').mockImplementation(() => clock);
    const progress: string[] = [];
    try {
      await runBilling(database.db, {
        usage: (tx) => {
          clock += 500;
          return new PostgresUsageAggregator(tx);
        },
        now: at('2026-02-01T00:00:00Z'),
        subscriptionIds,
        batchSize: 1,
        progress: (message) => progress.push(message),
      });
    } finally {
      spy.mockRestore();
    }
    // committed at 500, 1000 (a second since the start, exactly: reported), 1500, 2000 (reported), 2500 ms
    expect(progress).toEqual([
      'billing run: 2 subscriptions processed, 2 invoices created',
      'billing run: 4 subscriptions processed, 4 invoices created',
      'billing run: 5 subscriptions processed, 5 invoices created',
    ]);
  });

  it('--org bills one organization only', async () => {
    const a = await orgWithCatalog(database.db);
    const b = await orgWithCatalog(database.db);
    for (const org of [a, b]) {
      await subscribeFrom(org.orgId, org.customerId, org.seats, '2026-01-01T00:00:00Z');
    }
    const run = await runBilling(database.db, { usage, orgId: a.orgId, now: at('2026-02-01T00:00:00Z') });
    expect(run.invoices_created).toBe(1);
    const { rows } = await database.db.query('SELECT org_id FROM invoices WHERE org_id = ANY($1)', [
      [a.orgId, b.orgId],
    ]);
    expect(rows.map((r) => r.org_id)).toEqual([a.orgId]);
  });

  it('an overdue invoice makes the subscription past_due; paying it makes it active again', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const subscription = await subscribeFrom(orgId, customerId, seats, '2026-01-01T00:00:00Z');
    const early = await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
    expect(early.marked_past_due).toBe(0);
    // due 2026-03-03 (30 days); the next run after that marks the subscription past due
    const late = await runBilling(database.db, { usage, orgId, now: at('2026-03-04T00:00:00Z') });
    expect(late.marked_past_due).toBe(1);
    expect((await getSubscription(database.db, orgId, subscription.id)).status).toBe('past_due');
    // on April 10 two invoices are overdue: paying one is not enough, paying both is
    const now = at('2026-04-10T00:00:00Z');
    const [first, second] = [...early.invoice_ids, ...late.invoice_ids];
    await database.db.transaction((tx) => recordPayment(tx, { invoiceId: first!, amount: '11.30', now }));
    expect((await getSubscription(database.db, orgId, subscription.id)).status).toBe('past_due');
    await database.db.transaction((tx) => recordPayment(tx, { invoiceId: second!, amount: '11.30', now }));
    expect((await getSubscription(database.db, orgId, subscription.id)).status).toBe('active');
  });

  it('leaves invoices in DRAFT when asked, for `invoice post` later', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    await subscribeFrom(orgId, customerId, seats, '2026-01-01T00:00:00Z');
    const run = await runBilling(database.db, { usage, orgId, post: false, now: at('2026-02-01T00:00:00Z') });
    const draft = await getInvoice(database.db, orgId, run.invoice_ids[0]!);
    expect(draft.status).toBe('DRAFT');
    expect(await outbox(database.db, orgId, 'invoice.posted')).toEqual([]);
    const posted = await database.db.transaction((tx) => postInvoice(tx, { invoiceId: draft.id }));
    expect(posted.status).toBe('POSTED');
    expect(await outbox(database.db, orgId, 'invoice.posted')).toHaveLength(1);
    // posting it again is not a move: 409, and no second invoice.posted
    await expect(
      database.db.transaction((tx) => postInvoice(tx, { invoiceId: draft.id })),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await outbox(database.db, orgId, 'invoice.posted')).toHaveLength(1);
  });

  it('afterPosting hears once of each customer whose invoices the run posted, never of drafts or of nothing', async () => {
    const { orgId, seats } = await orgWithCatalog(database.db);
    const twice = await customerIn(database.db, orgId, { name: 'Two Subscriptions' });
    const once = await customerIn(database.db, orgId, { name: 'One Subscription' });
    const drafted = await customerIn(database.db, orgId, { name: 'Left In Draft' });
    for (const customer of [twice, twice, once]) {
      await subscribeFrom(orgId, customer, seats, '2026-01-01T00:00:00Z');
    }
    const draftOnly = await subscribeFrom(orgId, drafted, seats, '2026-01-01T00:00:00Z');
    const calls: { orgId: number; customerId: number }[][] = [];
    const afterPosting = async (customers: { orgId: number; customerId: number }[]) => {
      calls.push(customers);
    };
    const feb = at('2026-02-01T00:00:00Z');

    // a draft is not posted: its customer's credit did not move
    const drafts = await runBilling(database.db, {
      usage,
      orgId,
      subscriptionIds: [draftOnly.id],
      post: false,
      now: feb,
      afterPosting,
    });
    expect(drafts.invoices_created).toBe(1);
    expect(calls).toEqual([]);

    const posting = await runBilling(database.db, { usage, orgId, now: feb, afterPosting });
    expect(posting.invoices_created).toBe(3);
    expect(calls).toHaveLength(1);
    const byId = (a: { customerId: number }, b: { customerId: number }) => a.customerId - b.customerId;
    expect([...calls[0]!].sort(byId)).toEqual(
      [
        { orgId, customerId: twice },
        { orgId, customerId: once },
      ].sort(byId),
    );

    // nothing left to post: not called at all
    expect((await runBilling(database.db, { usage, orgId, now: feb, afterPosting })).invoices_created).toBe(
      0,
    );
    expect(calls).toHaveLength(1);
  });

  it("claims a customer's subscriptions due together in one batch: their invoices are numbered in a row", async () => {
    const { orgId, seats } = await orgWithCatalog(database.db);
    const first = await customerIn(database.db, orgId, { name: 'First Customer' });
    const second = await customerIn(database.db, orgId, { name: 'Second Customer' });
    // ids alternate between the customers; all three are due at the same instant
    const a = await subscribeFrom(orgId, first, seats, '2026-01-01T00:00:00Z');
    const b = await subscribeFrom(orgId, second, seats, '2026-01-01T00:00:00Z');
    const c = await subscribeFrom(orgId, first, seats, '2026-01-01T00:00:00Z');
    const run = await runBilling(database.db, {
      usage,
      orgId,
      batchSize: 2,
      now: at('2026-02-01T00:00:00Z'),
    });
    expect(run.invoices_created).toBe(3);
    const numbers = async (id: number) => (await invoicesOf(database.db, id)).map((i) => i.invoice_number);
    // the first batch holds the first customer's two, the second batch the other customer's one
    expect([await numbers(a.id), await numbers(c.id), await numbers(b.id)]).toEqual([
      ['INV-000001'],
      ['INV-000002'],
      ['INV-000003'],
    ]);
  });

  it('one subscription that cannot be billed does not stop the others, and is reported', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const good = await subscribeFrom(orgId, customerId, seats, '2026-01-01T00:00:00Z');
    const broken = await subscribeFrom(orgId, customerId, seats, '2026-01-01T00:00:00Z');
    await runBilling(database.db, {
      usage,
      orgId,
      subscriptionIds: [broken.id],
      now: at('2026-02-01T00:00:00Z'),
    });
    // a corrupted row: its billed period made due again; the unique key refuses a second invoice
    await database.db.query(
      `UPDATE subscriptions SET current_period_start = '2026-01-01', current_period_end = '2026-02-01',
              next_billing_date = '2026-02-01' WHERE id = $1`,
      [broken.id],
    );
    const run = await runBilling(database.db, { usage, orgId, now: at('2026-02-01T00:00:00Z') });
    expect(run.invoices_created).toBe(1);
    expect(run.failures).toEqual([
      { subscription_id: broken.id, error: expect.stringMatching(/duplicate key/) },
    ]);
    expect(await invoicesOf(database.db, good.id)).toHaveLength(1);
    expect(await invoicesOf(database.db, broken.id)).toHaveLength(1);
  });

  it('a one-time item is billed on the first paid period only', async () => {
    const { orgId, customerId, seats } = await orgWithCatalog(database.db);
    const setup = await productIn(database.db, orgId, {
      name: 'Setup',
      unit_price: '99',
      pricing_type: 'one_time',
    });
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }, { product_id: setup }],
      start_date: at('2026-01-01T00:00:00Z'),
    });
    await runBilling(database.db, { usage, orgId, now: at('2026-03-01T00:00:00Z') });
    // (10 + 99) x 1.13 = 123.17, then 10 x 1.13
    expect((await invoicesOf(database.db, subscription.id)).map((i) => i.total)).toEqual([
      '123.17000000',
      '11.30000000',
    ]);
  });
});
