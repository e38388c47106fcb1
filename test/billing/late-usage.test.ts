import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCreditGrant,
  createRefund,
  getSubscriptionUsage,
  previewUpcomingInvoice,
  recordPayment,
  rerateDirtyDrafts,
  runBilling,
  type UsageForTransaction,
  usageSource,
  withdrawInvoice,
} from '../../libs/billing/index.js';
import { Database, migrate, type Queryable, startEmbeddedPostgres } from '../../libs/db/index.js';
import { createOrganization, setOrganizationSettings } from '../../libs/organizations/index.js';
import { cancelSubscription, changeSubscription } from '../../libs/subscriptions/index.js';
import {
  PostgresUsageAggregator,
  PostgresUsageSink,
  type UsageReadStores,
  voidUsageEvent,
} from '../../libs/usage/index.js';
import { inProcessConsole } from '../helpers/console.js';
import { createTestDatabase } from '../helpers/database.js';
import { freePort } from '../helpers/processes.js';
import { readStoresOver } from '../helpers/read-stores.js';
import {
  basicCatalog,
  customerIn,
  expectPayableInvoices,
  outbox,
  productIn,
  recordUsage,
  subscribe,
} from './fixtures.js';

/**
 * Late usage and grace periods (docs/decisions.md "Late usage", "Grace drafts"), in both modes: a
 * Postgres database, and the embedded PGlite one.
 */

interface Mode {
  db: Database;
  close(): Promise<void>;
}

async function openMode(mode: 'postgres' | 'pglite'): Promise<Mode> {
  if (mode === 'postgres') {
    const database = await createTestDatabase('late_usage');
    return { db: database.db, close: () => database.drop() };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-late-'));
  const server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port: freePort() });
  const db = new Database(server.url, { poolSize: 3 });
  await migrate(db);
  return {
    db,
    async close() {
      await db.close();
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

const JAN = new Date('2026-01-01T00:00:00Z');
const FEB = new Date('2026-02-01T00:00:00Z');
const MAR = new Date('2026-03-01T00:00:00Z');
const APR = new Date('2026-04-01T00:00:00Z');

/** Voids the item's event at `occurredAt` as the sinks apply a void read from the log. */
async function voidInSink(db: Queryable, orgId: number, item: number, occurredAt: string, voidedAt: string) {
  const { rows } = await db.query<{ id: string; quantity: string; recorded_at: Date }>(
    `SELECT id, quantity::text AS quantity, recorded_at FROM usage_events
      WHERE subscription_item_id = $1 AND occurred_at = $2`,
    [item, occurredAt],
  );
  expect(rows).toHaveLength(1);
  await new PostgresUsageSink(db).writeVoids([
    {
      event: {
        id: rows[0]!.id,
        orgId,
        subscriptionItemId: item,
        idempotencyKey: 'x',
        quantity: rows[0]!.quantity,
        occurredAtMs: Date.parse(occurredAt),
        recordedAtMs: rows[0]!.recorded_at.getTime(),
      },
      voidedAtMs: Date.parse(voidedAt),
    },
  ]);
}

async function linesOf(db: Queryable, invoiceId: string) {
  const { rows } = await db.query<{ description: string; quantity: string; line_total_pre_tax: string }>(
    `SELECT description, quantity::text AS quantity, line_total_pre_tax::text AS line_total_pre_tax
       FROM invoice_items WHERE invoice_id = $1 ORDER BY position`,
    [invoiceId],
  );
  return rows;
}

/** An invoice's late-usage lines. */
async function lateLinesOf(db: Queryable, invoiceId: string) {
  return (await linesOf(db, invoiceId)).filter((line) => line.description.includes('late'));
}

/** The invoice as stored, with the columns the public one leaves out (subtotal, version) and its lines. */
async function invoiceOf(db: Queryable, invoiceId: string) {
  const { rows } = await db.query<{
    status: string;
    period_start: string;
    subtotal: string;
    tax_amount: string;
    total: string;
    version: string;
  }>(
    `SELECT status, period_start::text AS period_start, subtotal::text AS subtotal, tax_amount::text AS tax_amount,
            total::text AS total, version::text AS version
       FROM invoices WHERE id = $1`,
    [invoiceId],
  );
  const { rows: lines } = await db.query<{
    description: string;
    quantity: string;
    unit_price: string;
    line_total_pre_tax: string;
  }>(
    `SELECT description, quantity::text AS quantity, unit_price::text AS unit_price,
            line_total_pre_tax::text AS line_total_pre_tax
       FROM invoice_items WHERE invoice_id = $1 ORDER BY position`,
    [invoiceId],
  );
  return { ...rows[0]!, version: Number(rows[0]!.version), lines };
}

describe.each(['postgres', 'pglite'] as const)('late usage (%s)', (modeName) => {
  let mode: Mode;
  let db: Database;
  let usage: UsageForTransaction;
  let stores: UsageReadStores;
  beforeAll(async () => {
    mode = await openMode(modeName);
    db = mode.db;
    usage = usageSource(new PostgresUsageAggregator(db));
    stores = readStoresOver(db);
  }, 60_000);
  afterAll(() => mode?.close());

  async function setup(options: { graceHours?: number; currency?: string; included?: string } = {}) {
    const { id: orgId } = await createOrganization(db, {
      name: 'Late Co',
      currency: options.currency ?? 'CAD',
    });
    if (options.graceHours) {
      await db.query('UPDATE organizations SET invoice_grace_hours = $2 WHERE id = $1', [
        orgId,
        options.graceHours,
      ]);
    }
    const { seats, apiCalls } = await basicCatalog(db, orgId, options.currency ?? 'CAD');
    const customerId = await customerIn(db, orgId, { state_province: 'AB' }); // GST 5 %
    const make = () =>
      subscribe(
        db,
        orgId,
        {
          customer_id: customerId,
          items: [{ product_id: seats }, { product_id: apiCalls, included_units: options.included ?? '0' }],
          start_date: JAN,
        },
        JAN,
      );
    const subscription = await make();
    const metered = subscription.items.find((item) => item.usage_type === 'metered')!.id;
    return { orgId, customerId, subscription, metered, make };
  }

  it('a run catching up several periods puts the late line on the first of their invoices', async () => {
    const { orgId, metered } = await setup();
    await recordUsage(db, orgId, metered, '80', '2026-01-10T00:00:00Z');
    expect((await runBilling(db, { usage, orgId, now: FEB })).invoice_ids).toHaveLength(1);
    await recordUsage(db, orgId, metered, '40', '2026-01-20T00:00:00Z');
    // no run on Mar 1: February and March are billed by one run, in one batch
    const caughtUp = await runBilling(db, { usage, orgId, now: APR });
    const invoices = await Promise.all(caughtUp.invoice_ids.map((id) => invoiceOf(db, id)));
    expect(invoices.map((invoice) => invoice.period_start)).toEqual(['2026-02-01', '2026-03-01']);
    const late = await Promise.all(caughtUp.invoice_ids.map((id) => lateLinesOf(db, id)));
    expect(late.map((lines) => lines.map((line) => line.description))).toEqual([
      ['API calls: late usage, Jan 1-31'],
      [],
    ]);
  });

  it('bills late usage of a posted period once, on the next invoice, where its tiers left off', async () => {
    const { orgId, subscription, metered } = await setup();
    await recordUsage(db, orgId, metered, '80', '2026-01-10T00:00:00Z');
    const first = await runBilling(db, { usage, orgId, now: FEB });
    expect(first.invoice_ids).toHaveLength(1);
    const jan = await invoiceOf(db, first.invoice_ids[0]!);
    expect(jan.status).toBe('POSTED');
    expect(jan.subtotal).toBe('90.00000000'); // 10 seats + 80 calls at 1.00

    // late: 40 calls of January, and one at exactly February's first instant (February's own)
    await recordUsage(db, orgId, metered, '40', '2026-01-31T23:59:59.999Z');
    await recordUsage(db, orgId, metered, '7', '2026-02-01T00:00:00.000Z');
    const previous = await getSubscriptionUsage(db, stores, orgId, subscription.id, { period: 'previous' });
    expect(previous.items[0]).toMatchObject({ quantity: '120.00000000', late_quantity: '40.00000000' });
    // read at the very instant January ended: it has ended (and was billed), so its late usage shows
    const atEnd = await getSubscriptionUsage(db, stores, orgId, subscription.id, {
      period: 'previous',
      now: FEB,
    });
    expect(atEnd.items[0]).toMatchObject({ quantity: '120.00000000', late_quantity: '40.00000000' });
    // the running period's usage is its own: January's late line is the upcoming invoice's, not February's
    const running = await getSubscriptionUsage(db, stores, orgId, subscription.id);
    expect(running.items[0]).toMatchObject({ quantity: '7.00000000', amount: '7.00000000' });
    expect(running.total_amount).toBe('7.00000000');
    // price(120) - price(80) = (100 x 1.00 + 20 x 0.50) - 80.00 = 30.00
    const upcoming = await previewUpcomingInvoice(db, stores, orgId, subscription.id);
    expect(upcoming.lines.map((line) => [line.description, line.amount])).toEqual([
      ['Seats', '10.00000000'],
      ['API calls (usage: 7 calls)', '7.00000000'],
      ['API calls: late usage, Jan 1-31', '30.00000000'],
    ]);

    const second = await runBilling(db, { usage, orgId, now: MAR });
    const feb = await invoiceOf(db, second.invoice_ids[0]!);
    expect(feb.lines.map((line) => [line.description, line.line_total_pre_tax])).toEqual(
      upcoming.lines.map((line) => [line.description, line.amount]),
    );
    expect([feb.subtotal, feb.tax_amount, feb.total]).toEqual([
      upcoming.subtotal,
      upcoming.tax,
      upcoming.total,
    ]);

    // a rerun bills nothing twice; a second late event continues in the 0.50 tier
    expect((await runBilling(db, { usage, orgId, now: MAR })).invoice_ids).toEqual([]);
    await recordUsage(db, orgId, metered, '10', '2026-01-05T00:00:00Z');
    const third = await runBilling(db, { usage, orgId, now: APR });
    const mar = await linesOf(db, third.invoice_ids[0]!);
    expect(mar.filter((line) => line.description.includes('late usage'))).toEqual([
      {
        description: 'API calls: late usage, Jan 1-31',
        quantity: '10.0000',
        line_total_pre_tax: '5.00000000',
      },
    ]);
    const again = await getSubscriptionUsage(db, stores, orgId, subscription.id, { period: 'previous' });
    expect(again.period_start).toBe(MAR.toISOString());
  });

  it('bills late usage of an ended subscription once, on an invoice of its own dated the run', async () => {
    const { orgId, subscription, metered } = await setup();
    await recordUsage(db, orgId, metered, '80', '2026-01-10T00:00:00Z');
    await db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        atPeriodEnd: true,
        now: new Date('2026-01-20T00:00:00Z'),
      }),
    );
    const last = await runBilling(db, { usage, orgId, now: FEB });
    expect(last).toMatchObject({ invoices_created: 1, canceled: 1 });
    // nothing late yet: the run that ended it compared the period and billed nothing more
    expect((await runBilling(db, { usage, orgId, now: FEB })).invoice_ids).toEqual([]);

    await recordUsage(db, orgId, metered, '40', '2026-01-31T23:59:59.999Z');
    // a draft run bills no late usage of an ended subscription (a draft of late lines alone could
    // not be re-rated); the posting run after it does
    expect((await runBilling(db, { usage, orgId, now: MAR, post: false })).invoice_ids).toEqual([]);
    const late = await runBilling(db, { usage, orgId, now: MAR });
    expect(late.invoice_ids).toHaveLength(1);
    const invoice = await invoiceOf(db, late.invoice_ids[0]!);
    // price(120) - price(80) = 30.00, GST 5 %: no seats billed again
    expect(invoice).toMatchObject({
      status: 'POSTED',
      subtotal: '30.00000000',
      tax_amount: '1.50000000',
      total: '31.50000000',
    });
    expect(invoice.lines.map((line) => [line.description, line.line_total_pre_tax])).toEqual([
      ['API calls: late usage, Jan 1-31', '30.00000000'],
    ]);
    const { rows } = await db.query<{ invoice_date: string; due_date: string }>(
      'SELECT invoice_date::text AS invoice_date, due_date::text AS due_date FROM invoices WHERE id = $1',
      [late.invoice_ids[0]],
    );
    expect(rows[0]!.invoice_date).toBe('2026-03-01');
    expect(
      (await outbox(db, orgId, 'invoice.posted')).map((event) => (event.data as { id: string }).id),
    ).toContain(late.invoice_ids[0]);

    // once: a rerun and a later run bill nothing; a void of billed usage bills nothing negative
    expect((await runBilling(db, { usage, orgId, now: MAR })).invoice_ids).toEqual([]);
    await recordUsage(db, orgId, metered, '10', '2026-01-05T00:00:00Z');
    const again = await runBilling(db, { usage, orgId, now: APR });
    expect((await invoiceOf(db, again.invoice_ids[0]!)).lines).toMatchObject([
      {
        description: 'API calls: late usage, Jan 1-31',
        quantity: '10.0000',
        line_total_pre_tax: '5.00000000',
      },
    ]);
    expect((await runBilling(db, { usage, orgId, now: APR })).invoice_ids).toEqual([]);
    const { rows: dirty } = await db.query<{ dirty: boolean }>(
      'SELECT dirty FROM usage_billed_periods WHERE subscription_item_id = $1',
      [metered],
    );
    expect(dirty).toEqual([{ dirty: false }]);
    await expectPayableInvoices(db, orgId);
  });

  it('reports an ended subscription whose late usage failed to bill, and bills it on the next run', async () => {
    const { orgId, subscription, metered } = await setup();
    await recordUsage(db, orgId, metered, '80', '2026-01-10T00:00:00Z');
    await db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        atPeriodEnd: true,
        now: new Date('2026-01-20T00:00:00Z'),
      }),
    );
    await runBilling(db, { usage, orgId, now: FEB });
    await recordUsage(db, orgId, metered, '40', '2026-01-31T12:00:00Z');
    await db.query(`CREATE FUNCTION fail_ended_late_test() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'simulated crash'; END $$`);
    await db.query(
      `CREATE TRIGGER fail_ended_late_test BEFORE INSERT ON usage_late_billings
         FOR EACH ROW EXECUTE FUNCTION fail_ended_late_test()`,
    );
    let failed: Awaited<ReturnType<typeof runBilling>>;
    try {
      failed = await runBilling(db, { usage, orgId, now: MAR });
    } finally {
      await db.query('DROP TRIGGER fail_ended_late_test ON usage_late_billings');
      await db.query('DROP FUNCTION fail_ended_late_test()');
    }
    expect(failed.invoice_ids).toEqual([]);
    expect(failed.failures).toEqual([
      { subscription_id: subscription.id, error: expect.stringMatching(/simulated crash/) },
    ]);
    const retried = await runBilling(db, { usage, orgId, now: MAR });
    expect(retried.failures).toEqual([]);
    expect(retried.invoice_ids).toHaveLength(1);
    // price(120) - price(80), as when nothing failed
    expect((await invoiceOf(db, retried.invoice_ids[0]!)).subtotal).toBe('30.00000000');
  });

  it('bills late usage of a subscription canceled now, up to its end and not after', async () => {
    const { orgId, subscription, metered } = await setup();
    await recordUsage(db, orgId, metered, '5', '2026-01-05T00:00:00Z');
    const canceled = await db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: subscription.id, now: new Date('2026-01-15T00:00:00Z') }),
    );
    expect(canceled.final_invoice_id).toBeDefined();
    await recordUsage(db, orgId, metered, '3', '2026-01-14T23:59:59.999Z'); // late, within its life
    const run = await runBilling(db, { usage, orgId, now: new Date('2026-01-16T00:00:00Z') });
    expect(run.invoice_ids).toHaveLength(1);
    expect((await invoiceOf(db, run.invoice_ids[0]!)).lines).toMatchObject([
      {
        description: expect.stringContaining('API calls: late usage'),
        quantity: '3.0000',
        line_total_pre_tax: '3.00000000',
      },
    ]);
    expect((await runBilling(db, { usage, orgId, now: FEB })).invoice_ids).toEqual([]);
  });

  it("pays an ended subscription's late usage with usage-only credit, one invoice a day", async () => {
    const { orgId, customerId, subscription, metered } = await setup();
    await recordUsage(db, orgId, metered, '10', '2026-01-10T00:00:00Z');
    await db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        atPeriodEnd: true,
        now: new Date('2026-01-20T00:00:00Z'),
      }),
    );
    await runBilling(db, { usage, orgId, now: FEB });
    // only metered lines may spend it: the late lines of an ended subscription are metered lines
    await db.transaction((tx) =>
      createCreditGrant(tx, {
        customerId,
        input: { amount: '100.00', category: 'promotional', applies_to: 'usage' },
      }),
    );
    await recordUsage(db, orgId, metered, '20', '2026-01-11T00:00:00Z');
    const first = await runBilling(db, { usage, orgId, now: new Date('2026-02-10T08:00:00Z') });
    const { rows } = await db.query<{ status: string; amount_paid: string; total: string }>(
      'SELECT status, amount_paid::text AS amount_paid, total::text AS total FROM invoices WHERE id = $1',
      [first.invoice_ids[0]],
    );
    expect(rows[0]).toEqual({ status: 'PAID', amount_paid: '21.00000000', total: '21.00000000' });

    // more late usage the same day waits for the next day's run (one such invoice a day), then bills once
    await recordUsage(db, orgId, metered, '5', '2026-01-12T00:00:00Z');
    expect(
      (await runBilling(db, { usage, orgId, now: new Date('2026-02-10T20:00:00Z') })).invoice_ids,
    ).toEqual([]);
    const next = await runBilling(db, { usage, orgId, now: new Date('2026-02-11T00:00:00Z') });
    expect((await invoiceOf(db, next.invoice_ids[0]!)).lines).toMatchObject([
      { quantity: '5.0000', line_total_pre_tax: '5.00000000' },
    ]);
  });

  it('bills late usage of a period whose invoice credit paid only in part (PARTIALLY_PAID stands)', async () => {
    const { orgId, customerId, subscription, metered } = await setup();
    await recordUsage(db, orgId, metered, '80', '2026-01-10T00:00:00Z');
    await db.transaction((tx) =>
      createCreditGrant(tx, { customerId, input: { amount: '50.00', category: 'promotional' } }),
    );
    const first = await runBilling(db, { usage, orgId, now: FEB });
    const { rows } = await db.query<{ status: string; amount_paid: string }>(
      'SELECT status, amount_paid::text AS amount_paid FROM invoices WHERE id = $1',
      [first.invoice_ids[0]],
    );
    // 10 seats + 80 calls + GST 4.50 = 94.50, of which the grant paid 50.00
    expect(rows[0]).toEqual({ status: 'PARTIALLY_PAID', amount_paid: '50.00000000' });

    await recordUsage(db, orgId, metered, '40', '2026-01-31T00:00:00Z');
    const previous = await getSubscriptionUsage(db, stores, orgId, subscription.id, { period: 'previous' });
    expect(previous.items[0]).toMatchObject({ quantity: '120.00000000', late_quantity: '40.00000000' });
    const feb = await runBilling(db, { usage, orgId, now: MAR });
    expect(await lateLinesOf(db, feb.invoice_ids[0]!)).toEqual([
      {
        description: 'API calls: late usage, Jan 1-31',
        quantity: '40.0000',
        line_total_pre_tax: '30.00000000',
      },
    ]);
  });

  it('bills late usage of a period whose invoice was paid, then refunded in part or whole (the refund stands)', async () => {
    // a refund gives money back; the invoice stays issued, so what came late is still owed
    for (const [refunded, status] of [
      ['40', 'PARTIALLY_REFUNDED'],
      ['94.50', 'REFUNDED'],
    ] as const) {
      const { orgId, metered } = await setup();
      await recordUsage(db, orgId, metered, '80', '2026-01-10T00:00:00Z');
      const first = await runBilling(db, { usage, orgId, now: FEB });
      const invoiceId = first.invoice_ids[0]!;
      // 10 seats + 80 calls + GST 4.50 = 94.50
      await db.transaction((tx) => recordPayment(tx, { invoiceId, orgId, amount: '94.50' }));
      const back = await db.transaction((tx) => createRefund(tx, { invoiceId, orgId, amount: refunded }));
      expect(back.invoice.status).toBe(status);

      await recordUsage(db, orgId, metered, '40', '2026-01-31T00:00:00Z');
      const feb = await runBilling(db, { usage, orgId, now: MAR });
      expect(await lateLinesOf(db, feb.invoice_ids[0]!), status).toEqual([
        {
          description: 'API calls: late usage, Jan 1-31',
          quantity: '40.0000',
          line_total_pre_tax: '30.00000000',
        },
      ]);
    }
  });

  it('adds each late billing of a period to what was billed late of it: a later late event is billed alone', async () => {
    const { orgId, metered } = await setup();
    await recordUsage(db, orgId, metered, '80', '2026-01-10T00:00:00Z');
    await runBilling(db, { usage, orgId, now: FEB });
    // January's late usage billed twice: 40 on February's invoice, then 10 on March's
    await recordUsage(db, orgId, metered, '40', '2026-01-20T00:00:00Z');
    await runBilling(db, { usage, orgId, now: MAR });
    await recordUsage(db, orgId, metered, '10', '2026-01-21T00:00:00Z');
    await runBilling(db, { usage, orgId, now: APR });
    const { rows } = await db.query<{ late_quantity: string }>(
      `SELECT late_quantity::text AS late_quantity FROM usage_billed_periods
        WHERE subscription_item_id = $1 AND period_start = $2`,
      [metered, JAN],
    );
    expect(rows.map((row) => Number(row.late_quantity))).toEqual([50]);
    // 2 more: billed 80 + 50 before, so the 2 alone, in the 0.50 tier
    await recordUsage(db, orgId, metered, '2', '2026-01-22T00:00:00Z');
    const may = await runBilling(db, { usage, orgId, now: new Date('2026-05-01T00:00:00Z') });
    expect(await lateLinesOf(db, may.invoice_ids[0]!)).toEqual([
      {
        description: 'API calls: late usage, Jan 1-31',
        quantity: '2.0000',
        line_total_pre_tax: '1.00000000',
      },
    ]);
  });

  it('clears the mark of a posted period its comparison found nothing late in', async () => {
    const { orgId, metered } = await setup();
    await recordUsage(db, orgId, metered, '80', '2026-01-10T00:00:00Z');
    await runBilling(db, { usage, orgId, now: FEB });
    const dirty = async () =>
      (
        await db.query<{ dirty: boolean }>(
          'SELECT dirty FROM usage_billed_periods WHERE subscription_item_id = $1 AND period_start = $2',
          [metered, JAN],
        )
      ).rows[0]!.dirty;
    // made dirty with its invoice: the next run compares it with what Postgres counts
    expect(await dirty()).toBe(true);
    const feb = await runBilling(db, { usage, orgId, now: MAR });
    expect(await lateLinesOf(db, feb.invoice_ids[0]!)).toEqual([]);
    // compared, nothing grew: done, so later runs do not count it again
    expect(await dirty()).toBe(false);
  });

  it('counts each compared period over its own window: an item removed mid-period beside one kept', async () => {
    const { id: orgId } = await createOrganization(db, { name: 'Windows Co', currency: 'CAD' });
    const { seats, apiCalls } = await basicCatalog(db, orgId);
    const moreCalls = await productIn(db, orgId, {
      name: 'More calls',
      pricing_type: 'usage',
      pricing_mode: 'graduated',
      currency: 'CAD',
      unit_label: 'calls',
      tiers: [{ up_to: null, unit_price: '1.00' }],
    });
    const customerId = await customerIn(db, orgId, { state_province: 'AB' });
    const subscription = await subscribe(
      db,
      orgId,
      {
        customer_id: customerId,
        items: [{ product_id: seats }, { product_id: apiCalls }, { product_id: moreCalls }],
        start_date: JAN,
      },
      JAN,
    );
    const [removed, kept] = subscription.items
      .filter((item) => item.usage_type === 'metered')
      .map((item) => item.id)
      .sort((a, b) => a - b);
    const seatItem = subscription.items.find((item) => item.usage_type === 'licensed')!.id;
    await recordUsage(db, orgId, removed!, '5', '2026-01-05T00:00:00Z');
    await recordUsage(db, orgId, kept!, '10', '2026-01-05T00:00:00Z');
    // the first item leaves on Jan 15: its window is Jan 1-15, the kept item's Jan 1-Feb 1
    await changeSubscription(db, {
      subscriptionId: subscription.id,
      orgId,
      change: { items: [{ id: seatItem }, { id: kept! }], proration: 'none' },
      now: new Date('2026-01-15T00:00:00Z'),
    });
    await runBilling(db, { usage, orgId, now: FEB });
    // late: the kept item's usage after the removal, in its own window only
    await recordUsage(db, orgId, kept!, '3', '2026-01-20T00:00:00Z');
    const feb = await runBilling(db, { usage, orgId, now: MAR });
    expect(await lateLinesOf(db, feb.invoice_ids[0]!)).toEqual([
      {
        description: 'More calls: late usage, Jan 1-31',
        quantity: '3.0000',
        line_total_pre_tax: '3.00000000',
      },
    ]);
  });

  it('bills late usage from what the customer kept paying for once a correction voided part of a posted period', async () => {
    const { orgId, subscription, metered } = await setup();
    await recordUsage(db, orgId, metered, '50', '2026-01-10T00:00:00Z');
    await recordUsage(db, orgId, metered, '30', '2026-01-11T00:00:00Z');
    await runBilling(db, { usage, orgId, now: FEB });
    // a correction (a credit note's void) takes the 30 back through the log: the sinks apply it
    await voidInSink(db, orgId, metered, '2026-01-11T00:00:00Z', '2026-02-03T00:00:00Z');
    await recordUsage(db, orgId, metered, '40', '2026-01-20T00:00:00Z');
    // the read-back says the same: of the 90 counted, the invoice billed (and kept) 50
    const previous = await getSubscriptionUsage(db, stores, orgId, subscription.id, { period: 'previous' });
    expect(previous.items[0]).toMatchObject({ quantity: '90.00000000', late_quantity: '40.00000000' });
    const feb = await runBilling(db, { usage, orgId, now: MAR });
    // 50 kept + 40 late: price(90) - price(50) = 40.00 (not price(120) - price(80) = 30.00)
    expect(await lateLinesOf(db, feb.invoice_ids[0]!)).toEqual([
      {
        description: 'API calls: late usage, Jan 1-31',
        quantity: '40.0000',
        line_total_pre_tax: '40.00000000',
      },
    ]);
  });

  it("marks nothing of a posted period for events at exactly its end: inserted or voided, they are the next period's", async () => {
    const { orgId, metered } = await setup();
    await recordUsage(db, orgId, metered, '80', '2026-01-10T00:00:00Z');
    await runBilling(db, { usage, orgId, now: FEB });
    const january = async () => {
      const { rows } = await db.query<{ dirty: boolean; period_quantity: string }>(
        `SELECT dirty, period_quantity::text AS period_quantity FROM usage_billed_periods
          WHERE subscription_item_id = $1 AND period_start = $2`,
        [metered, JAN],
      );
      return rows[0];
    };
    // a period's record is made dirty; as the subscription's next run leaves it once compared:
    expect(await january()).toEqual({ dirty: true, period_quantity: '80.00000000' });
    await db.query('UPDATE usage_billed_periods SET dirty = false WHERE subscription_item_id = $1', [
      metered,
    ]);

    await recordUsage(db, orgId, metered, '7', FEB.toISOString());
    expect(await january()).toEqual({ dirty: false, period_quantity: '80.00000000' });
    await voidInSink(db, orgId, metered, FEB.toISOString(), '2026-02-03T00:00:00Z');
    expect(await january()).toEqual({ dirty: false, period_quantity: '80.00000000' });
    // February's 7 came and went, and January has no late line
    const feb = await runBilling(db, { usage, orgId, now: MAR });
    expect((await linesOf(db, feb.invoice_ids[0]!)).map((line) => line.description)).toEqual([
      'Seats',
      'API calls (usage: 0 calls)',
    ]);
  });

  it("bills again a withdrawn draft's period with an item a change removed within it", async () => {
    const { orgId, subscription, metered } = await setup();
    await recordUsage(db, orgId, metered, '25', '2026-01-05T00:00:00Z');
    const seatItem = subscription.items.find((item) => item.usage_type === 'licensed')!.id;
    await changeSubscription(db, {
      subscriptionId: subscription.id,
      orgId,
      change: { items: [{ id: seatItem }], proration: 'none' },
      now: new Date('2026-01-15T00:00:00Z'),
    });
    const draft = await runBilling(db, { usage, orgId, now: FEB, post: false });
    const before = await invoiceOf(db, draft.invoice_ids[0]!);
    expect(before.subtotal).toBe('35.00000000'); // seats 10 + 25 calls until the removal
    await db.transaction((tx) => withdrawInvoice(tx, { invoiceId: draft.invoice_ids[0]!, orgId }));
    const rebill = await runBilling(db, { usage, orgId, now: new Date('2026-02-02T00:00:00Z') });
    const again = await invoiceOf(db, rebill.invoice_ids[0]!);
    expect([again.status, again.period_start, again.subtotal]).toEqual([
      'POSTED',
      '2026-01-01',
      '35.00000000',
    ]);
    expect(again.lines.map((line) => line.description)).toEqual(before.lines.map((line) => line.description));
  });

  it("rounds late lines so a period's lines add up to the price of all it counted (JPY 0, KWD 3 decimals)", async () => {
    // JPY: 100 x 1 + 0.5 per call beyond; 101 calls = 100.5 -> 101 yen (half-up)
    const jpy = await setup({ currency: 'JPY' });
    await recordUsage(db, jpy.orgId, jpy.metered, '101', '2026-01-10T00:00:00Z');
    await runBilling(db, { usage, orgId: jpy.orgId, now: FEB });
    const lateOf = async (invoiceIds: string[]) =>
      (await linesOf(db, invoiceIds[0]!)).filter((line) => line.description.includes('late usage'));
    await recordUsage(db, jpy.orgId, jpy.metered, '1', '2026-01-11T00:00:00Z'); // 101 yen -> 101: 0
    const feb = await runBilling(db, { usage, orgId: jpy.orgId, now: MAR });
    await recordUsage(db, jpy.orgId, jpy.metered, '1', '2026-01-12T00:00:00Z'); // 101.5 -> 102: 1
    const mar = await runBilling(db, { usage, orgId: jpy.orgId, now: APR });
    expect([...(await lateOf(feb.invoice_ids)), ...(await lateOf(mar.invoice_ids))]).toEqual([
      {
        description: 'API calls: late usage, Jan 1-31',
        quantity: '1.0000',
        line_total_pre_tax: '0.00000000',
      },
      {
        description: 'API calls: late usage, Jan 1-31',
        quantity: '1.0000',
        line_total_pre_tax: '1.00000000',
      },
    ]);

    // KWD: 0.1235 a call; 3 calls = 0.3705 -> 0.371, 4 calls = 0.494: the late line is 0.123
    const kwd = await setup({ currency: 'KWD' });
    const perCall = await productIn(db, kwd.orgId, {
      name: 'Lookups',
      pricing_type: 'usage',
      unit_price: '0.1235',
      currency: 'KWD',
      unit_label: 'lookups',
    });
    const lookups = await subscribe(
      db,
      kwd.orgId,
      { customer_id: kwd.customerId, items: [{ product_id: perCall }], start_date: JAN },
      JAN,
    );
    const item = lookups.items[0]!.id;
    await recordUsage(db, kwd.orgId, item, '3', '2026-01-10T00:00:00Z');
    const janRun = await runBilling(db, { usage, orgId: kwd.orgId, now: FEB, subscriptionIds: [lookups.id] });
    expect((await linesOf(db, janRun.invoice_ids[0]!))[0]!.line_total_pre_tax).toBe('0.37100000');
    await recordUsage(db, kwd.orgId, item, '1', '2026-01-31T00:00:00Z');
    const febRun = await runBilling(db, { usage, orgId: kwd.orgId, now: MAR, subscriptionIds: [lookups.id] });
    expect(await lateOf(febRun.invoice_ids)).toEqual([
      { description: 'Lookups: late usage, Jan 1-31', quantity: '1.0000', line_total_pre_tax: '0.12300000' },
    ]);
    await expectPayableInvoices(db, jpy.orgId);
    // (that helper knows JPY and cents): KWD amounts are whole fils, and add up
    const { rows } = await db.query<{ bad: number }>(
      `SELECT count(*)::int AS bad FROM invoices i
        WHERE i.org_id = $1 AND (i.total % 0.001 <> 0 OR i.tax_amount % 0.001 <> 0 OR i.total <> i.subtotal + i.tax_amount
          OR i.subtotal <> (SELECT sum(line_total_pre_tax) FROM invoice_items WHERE invoice_id = i.id))`,
      [kwd.orgId],
    );
    expect(rows[0]!.bad).toBe(0);
  });

  it('keeps a period on a grace DRAFT, re-rated by late events like the upcoming invoice, posted at its end + N hours', async () => {
    const { orgId, subscription, metered, make } = await setup({ graceHours: 24 });
    const twin = await make();
    const twinMetered = twin.items.find((item) => item.usage_type === 'metered')!.id;
    for (const [item, sub] of [
      [metered, subscription.id],
      [twinMetered, twin.id],
    ] as const) {
      void sub;
      await recordUsage(db, orgId, item, '90', '2026-01-10T00:00:00Z');
    }
    const run = await runBilling(db, { usage, orgId, now: FEB, subscriptionIds: [subscription.id] });
    const draftId = run.invoice_ids[0]!;
    const draft = await invoiceOf(db, draftId);
    expect(draft.status).toBe('DRAFT');
    const created = await outbox(db, orgId, 'invoice.created');
    expect(created.map((event) => event.data.id)).toEqual([draftId]);
    expect(await outbox(db, orgId, 'invoice.posted')).toEqual([]);

    // late events: the draft is re-rated to exactly what the twin's upcoming invoice shows
    for (const item of [metered, twinMetered])
      await recordUsage(db, orgId, item, '25.5', '2026-01-31T12:00:00Z');
    // a DRAFT billed nothing yet: what it counted is no bill, so none of the period is late usage
    const onDraft = await getSubscriptionUsage(db, stores, orgId, subscription.id, { period: 'previous' });
    expect(onDraft.items[0]).toMatchObject({ quantity: '115.50000000', late_quantity: '0.00000000' });
    expect(await rerateDirtyDrafts(db, { orgId })).toEqual([draftId]);
    // re-rated: its period compared again (the mark cleared), so the next pass leaves it be
    const { rows: marks } = await db.query<{ dirty: boolean }>(
      'SELECT dirty FROM usage_billed_periods WHERE invoice_id = $1',
      [draftId],
    );
    expect(marks.map((mark) => mark.dirty)).toEqual([false]);
    const rerated = await invoiceOf(db, draftId);
    expect(rerated.version).toBeGreaterThan(draft.version);
    const preview = await previewUpcomingInvoice(db, stores, orgId, twin.id);
    expect(
      rerated.lines.map((line) => [
        line.description,
        line.quantity,
        line.unit_price,
        line.line_total_pre_tax,
      ]),
    ).toEqual(preview.lines.map((line) => [line.description, line.quantity, line.unit_price, line.amount]));
    expect([rerated.subtotal, rerated.tax_amount, rerated.total]).toEqual([
      preview.subtotal,
      preview.tax,
      preview.total,
    ]);
    expect(rerated.subtotal).toBe('117.75000000'); // 10 + 100 + 15.5 x 0.50

    // posted at exactly period end + 24 h, not an instant before
    const postAt = new Date(FEB.getTime() + 24 * 3_600_000);
    await runBilling(db, {
      usage,
      orgId,
      now: new Date(postAt.getTime() - 1),
      subscriptionIds: [subscription.id],
    });
    expect((await invoiceOf(db, draftId)).status).toBe('DRAFT');
    const posting = await runBilling(db, { usage, orgId, now: postAt, subscriptionIds: [subscription.id] });
    expect(posting.grace_posted).toEqual([draftId]);
    expect((await invoiceOf(db, draftId)).status).toBe('POSTED');
    expect((await outbox(db, orgId, 'invoice.posted')).map((event) => event.data.id)).toEqual([draftId]);

    // after posting, a late event is late usage of the next invoice
    await recordUsage(db, orgId, metered, '4', '2026-01-20T00:00:00Z');
    const usageNow = await getSubscriptionUsage(db, stores, orgId, subscription.id, { period: 'previous' });
    expect(usageNow.items[0]!.late_quantity).toBe('4.00000000');
  });

  it("posts only the asked organization's grace drafts whose grace has passed", async () => {
    const asked = await setup({ graceHours: 24 });
    const other = await setup({ graceHours: 24 });
    const drafts: string[] = [];
    for (const { orgId } of [asked, other]) {
      const run = await runBilling(db, { usage, orgId, now: FEB });
      drafts.push(run.invoice_ids[0]!);
    }
    const postAt = new Date(FEB.getTime() + 24 * 3_600_000);
    const posting = await runBilling(db, { usage, orgId: asked.orgId, now: postAt });
    expect(posting.grace_posted).toEqual([drafts[0]]);
    expect([(await invoiceOf(db, drafts[0]!)).status, (await invoiceOf(db, drafts[1]!)).status]).toEqual([
      'POSTED',
      'DRAFT',
    ]);
  });

  it('lets a void re-rate a DRAFT, and bills again a period whose draft was withdrawn', async () => {
    const { orgId, subscription, metered } = await setup();
    await recordUsage(db, orgId, metered, '30', '2026-01-10T00:00:00Z');
    await recordUsage(db, orgId, metered, '20', '2026-01-11T00:00:00Z');
    const run = await runBilling(db, { usage, orgId, now: FEB, post: false });
    const draftId = run.invoice_ids[0]!;
    expect((await invoiceOf(db, draftId)).subtotal).toBe('60.00000000');
    // compared once: nothing changed, and its periods are no longer dirty; only the void marks them
    expect(await rerateDirtyDrafts(db, { orgId })).toEqual([]);
    expect((await invoiceOf(db, draftId)).subtotal).toBe('60.00000000');
    const { rows: marks } = await db.query<{ dirty: boolean }>(
      'SELECT dirty FROM usage_billed_periods WHERE invoice_id = $1',
      [draftId],
    );
    expect(marks.map((mark) => mark.dirty)).toEqual([false]);
    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM usage_events WHERE subscription_item_id = $1 AND quantity = 20',
      [metered],
    );
    const voided = await voidUsageEvent(db, stores, orgId, rows[0]!.id);
    expect(voided.status).toBe('VOIDED');
    await rerateDirtyDrafts(db, { orgId });
    expect((await invoiceOf(db, draftId)).subtotal).toBe('40.00000000');

    await db.transaction((tx) => withdrawInvoice(tx, { invoiceId: draftId, orgId }));
    const rebill = await runBilling(db, { usage, orgId, now: new Date('2026-02-02T00:00:00Z') });
    expect(rebill.invoice_ids).toHaveLength(1);
    const again = await invoiceOf(db, rebill.invoice_ids[0]!);
    expect([again.status, again.period_start, again.subtotal]).toEqual([
      'POSTED',
      '2026-01-01',
      '40.00000000',
    ]);
    expect(
      (await runBilling(db, { usage, orgId, now: new Date('2026-02-03T00:00:00Z') })).invoice_ids,
    ).toEqual([]);
    // the period is posted now: a void of it is refused
    const { rows: left } = await db.query<{ id: string }>(
      'SELECT id FROM usage_events WHERE subscription_item_id = $1 AND voided_at IS NULL',
      [metered],
    );
    await expect(voidUsageEvent(db, stores, orgId, left[0]!.id)).rejects.toMatchObject({ code: 'CONFLICT' });
    void subscription;
  });
});

describe('the invoice_grace_hours setting', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let env: Record<string, string>;
  beforeAll(async () => {
    database = await createTestDatabase('late_usage_console');
    env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: 'silent',
      PORT: '8080',
      HOST: '127.0.0.1',
      CLICKHOUSE_URL: '',
    };
  });
  afterAll(() => database?.drop());
  const run = inProcessConsole(() => env);

  it('is 0 by default, set by `org set`, 0..720, shown with the organization', async () => {
    const created = (await run('org', 'create', '--name', 'Grace Co')).json() as Record<string, unknown>;
    expect(created.invoice_grace_hours).toBe(0);
    const orgId = String(created.id);
    for (const hours of ['720', '0', '1']) {
      const set = await run('org', 'set', '--org', orgId, '--invoice-grace-hours', hours);
      expect(set.code, set.stderr).toBe(0);
      expect((set.json() as Record<string, unknown>).invoice_grace_hours).toBe(Number(hours));
    }
    for (const hours of ['721', '-1']) {
      const refused = await run('org', 'set', '--org', orgId, '--invoice-grace-hours', hours);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/invoice.grace.hours: Must be a whole number of hours from 0 to 720/);
    }
    await expect(
      setOrganizationSettings(database.db, Number(orgId), { invoiceGraceHours: 721 }),
    ).rejects.toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: 'invoice_grace_hours' }] });
    const listed = (await run('org', 'list')).json() as { data: Record<string, unknown>[] };
    expect(listed.data.find((org) => String(org.id) === orgId)?.invoice_grace_hours).toBe(1);
  });
});

describe('late usage racing the run (postgres)', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let usage: UsageForTransaction;
  beforeAll(async () => {
    database = await createTestDatabase('late_usage_race');
    usage = usageSource(new PostgresUsageAggregator(database.db));
  });
  afterAll(() => database?.drop());

  /** Period line + late lines billed for January of `subscriptionId`, and what January counts. */
  async function januaryOf(subscriptionId: number, item: number) {
    const { rows } = await database.db.query<{ billed: string; counted: string }>(
      `SELECT (SELECT coalesce(sum(ii.quantity), 0)::text FROM invoices i JOIN invoice_items ii ON ii.invoice_id = i.id
                WHERE i.subscription_id = $1 AND i.status <> 'WITHDRAWN'
                  AND ((i.period_start = '2026-01-01' AND ii.description LIKE 'API calls (usage%')
                       OR ii.description = 'API calls: late usage, Jan 1-31')) AS billed,
              (SELECT coalesce(sum(quantity), 0)::numeric(20, 4)::text FROM usage_events
                WHERE subscription_item_id = $2 AND voided_at IS NULL
                  AND occurred_at >= '2026-01-01' AND occurred_at < '2026-02-01') AS counted`,
      [subscriptionId, item],
    );
    return rows[0]!;
  }

  it('bills every late event exactly once while runs and events race, two runs at once', async () => {
    const db = database.db;
    const { id: orgId } = await createOrganization(db, { name: 'Race Co' });
    const { seats, apiCalls } = await basicCatalog(db, orgId);
    const customerId = await customerIn(db, orgId, { state_province: 'AB' });
    const subs = [];
    for (let i = 0; i < 20; i++) {
      const subscription = await subscribe(
        db,
        orgId,
        {
          customer_id: customerId,
          items: [{ product_id: seats }, { product_id: apiCalls }],
          start_date: JAN,
        },
        JAN,
      );
      subs.push({
        id: subscription.id,
        item: subscription.items.find((x) => x.usage_type === 'metered')!.id,
      });
      await recordUsage(db, orgId, subs.at(-1)!.item, '5', '2026-01-03T00:00:00Z');
    }
    await runBilling(db, { usage, orgId, now: FEB });
    // late events of January arrive while two February runs and a March run race them
    const writes = (async () => {
      for (let round = 0; round < 15; round++) {
        await Promise.all(subs.map((sub) => recordUsage(db, orgId, sub.item, '1', '2026-01-20T00:00:00Z')));
      }
    })();
    await Promise.all([
      writes,
      runBilling(db, { usage, orgId, now: MAR, batchSize: 3 }),
      runBilling(db, { usage, orgId, now: MAR, batchSize: 5 }),
    ]);
    await runBilling(db, { usage, orgId, now: APR });
    for (const sub of subs) {
      const january = await januaryOf(sub.id, sub.item);
      expect(Number(january.billed), `subscription ${sub.id}`).toBe(Number(january.counted));
      expect(Number(january.counted)).toBe(20);
    }
  }, 60_000);

  it('loses nothing when a run fails midway: the batch rolls back and the next run bills it once', async () => {
    const db = database.db;
    const { id: orgId } = await createOrganization(db, { name: 'Crash Co' });
    const { seats, apiCalls } = await basicCatalog(db, orgId);
    const customerId = await customerIn(db, orgId, { state_province: 'AB' });
    const subscription = await subscribe(
      db,
      orgId,
      { customer_id: customerId, items: [{ product_id: seats }, { product_id: apiCalls }], start_date: JAN },
      JAN,
    );
    const item = subscription.items.find((x) => x.usage_type === 'metered')!.id;
    await recordUsage(db, orgId, item, '50', '2026-01-03T00:00:00Z');
    await runBilling(db, { usage, orgId, now: FEB });
    await recordUsage(db, orgId, item, '70', '2026-01-25T00:00:00Z');
    // the write of February's invoice fails after its late line was composed (a crash mid-batch)
    await db.query(`CREATE FUNCTION fail_late_test() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'simulated crash'; END $$`);
    await db.query(
      `CREATE TRIGGER fail_late_test BEFORE INSERT ON usage_late_billings FOR EACH ROW EXECUTE FUNCTION fail_late_test()`,
    );
    const failed = await runBilling(db, { usage, orgId, now: MAR });
    expect(failed.invoice_ids).toEqual([]);
    expect(failed.failures.map((failure) => failure.subscription_id)).toEqual([subscription.id]);
    await db.query('DROP TRIGGER fail_late_test ON usage_late_billings');
    const retried = await runBilling(db, { usage, orgId, now: MAR });
    expect(retried.invoice_ids).toHaveLength(1);
    const lines = await linesOf(db, retried.invoice_ids[0]!);
    // price(120) - price(50) = 110.00 - 50.00
    expect(lines.filter((line) => line.description.includes('late usage'))).toEqual([
      {
        description: 'API calls: late usage, Jan 1-31',
        quantity: '70.0000',
        line_total_pre_tax: '60.00000000',
      },
    ]);
    await runBilling(db, { usage, orgId, now: APR });
    expect(await januaryOf(subscription.id, item)).toEqual({ billed: '120.0000', counted: '120.0000' });
  });
});
