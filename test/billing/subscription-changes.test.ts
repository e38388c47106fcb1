import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  previewUpcomingInvoice,
  runBilling,
  type UsageForTransaction,
  usageSource,
} from '../../libs/billing/index.js';
import { Database, type Queryable } from '../../libs/db/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { SubscriptionUpdatedEventData } from '../../libs/schemas/index.js';
import {
  cancelSubscription,
  changeSubscription,
  getSubscription,
  listSubscriptions,
} from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator, type UsageReadStores } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase, withoutIndexOrder } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { readStoresOver } from '../helpers/read-stores.js';
import {
  basicCatalog,
  customerIn,
  expectPayableInvoices,
  outbox,
  productIn,
  recordUsage,
  subscribe as subscribeAt,
} from './fixtures.js';

/*
 * Subscription changes against real Postgres, billed by the billing run in the same tests. The
 * customer is in Ontario (HST 13 %); seats cost 10.00 a month. Expected amounts are worked out by
 * hand in each test: price x quantity x seconds left / seconds of the period, half-up to the cent.
 */

let database: TestDatabase;
let usage: UsageForTransaction;
let stores: UsageReadStores;

beforeAll(async () => {
  database = await createTestDatabase('subscription_changes');
  usage = usageSource(new PostgresUsageAggregator(database.db));
  stores = readStoresOver(database.db);
});
afterAll(async () => {
  await stores.close();
  await database.drop();
});

const at = (iso: string) => new Date(iso);

/**
 * The quantities of `changes` credit/charge pairs of one item, in the order written: each credit
 * is for the quantity the charge before it left (the first for `from`).
 */
function expectChainedLines(quantities: readonly string[], changes: number, from: string): void {
  expect(quantities).toHaveLength(2 * changes);
  for (let pair = 0; pair < changes; pair++) {
    expect(quantities[2 * pair]).toBe(pair === 0 ? from : quantities[2 * pair - 1]);
  }
}

/** Created when it starts: active (or trialing) from then, its first period running. */
function subscribe(
  db: TestDatabase['db'],
  orgId: number,
  input: Parameters<typeof subscribeAt>[2],
  now?: Date,
) {
  return subscribeAt(db, orgId, input, now ?? input.start_date);
}

async function setUp() {
  const { orgId } = await createTestOrg(database.db);
  const catalog = await basicCatalog(database.db, orgId);
  const storage = await productIn(database.db, orgId, {
    name: 'Storage',
    pricing_type: 'usage',
    unit_price: '0.10',
    currency: 'CAD',
    unit_label: 'GB',
  });
  const customerId = await customerIn(database.db, orgId);
  return { orgId, customerId, storage, ...catalog };
}

/** An organization of setUp whose customer subscribed to `quantity` seats on 2026-03-01. */
async function seatsFromMarch(quantity = 2) {
  const setup = await setUp();
  const subscription = await subscribe(database.db, setup.orgId, {
    customer_id: setup.customerId,
    items: [{ product_id: setup.seats, quantity }],
    start_date: at('2026-03-01T00:00:00Z'),
  });
  return { ...setup, subscription };
}

function change(orgId: number, subscriptionId: number, body: unknown, now: string) {
  return changeSubscription(database.db, { subscriptionId, orgId, change: body, now: at(now) });
}

async function invoiceLines(orgId: number, invoiceId: string) {
  const invoice = await getInvoice(database.db, orgId, invoiceId);
  const { rows } = await database.db.query<{ subtotal: string }>(
    'SELECT subtotal FROM invoices WHERE id = $1',
    [invoiceId],
  );
  return {
    lines: invoice.items.map((item) => [item.description, item.quantity, item.line_total_pre_tax]),
    subtotal: rows[0]!.subtotal,
    tax: invoice.tax_amount,
    total: invoice.total,
  };
}

async function invoiceTotals(orgId: number, invoiceIds: readonly string[]) {
  return Promise.all(invoiceIds.map(async (invoiceId) => (await invoiceLines(orgId, invoiceId)).total));
}

/** Two seats from March 1 for a two-month term that does not renew. */
function twoMonthTerm(orgId: number, customerId: number, seats: number) {
  return subscribe(database.db, orgId, {
    customer_id: customerId,
    items: [{ product_id: seats, quantity: 2 }],
    start_date: at('2026-03-01T00:00:00Z'),
    term_type: 'termed',
    initial_term_months: 2,
    auto_renew: false,
  });
}

async function billAt(orgId: number, now: string) {
  const summary = await runBilling(database.db, { usage, orgId, now: at(now) });
  expect(summary.failures).toEqual([]);
  return summary;
}

describe('subscription changes, billed by the run', () => {
  it("a batch whose periods end on different days carries every period's waiting lines", async () => {
    const { orgId, customerId, seats, subscription } = await seatsFromMarch();
    const item = subscription.items[0]!;
    await change(orgId, subscription.id, { items: [{ id: item.id, quantity: 3 }] }, '2026-03-11T00:00:00Z');
    // another subscription of the batch, not billed since February: its first period ends on Mar 1
    await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats, quantity: 1 }],
      start_date: at('2026-02-01T00:00:00Z'),
    });
    const summary = await billAt(orgId, '2026-04-01T00:00:00Z');
    expect(summary.invoice_ids).toHaveLength(3);
    const march = (
      await database.db.query<{ id: string }>('SELECT id FROM invoices WHERE subscription_id = $1', [
        subscription.id,
      ])
    ).rows;
    expect(march).toHaveLength(1);
    // seats, then the change's credit and charge: on the invoice of the period they belong to
    expect((await invoiceLines(orgId, march[0]!.id)).lines).toHaveLength(3);
  });

  it('upgrade mid-period: the preview equals what is applied, the next invoice carries both lines', async () => {
    const { orgId, subscription } = await seatsFromMarch();
    const item = subscription.items[0]!;
    const body = { items: [{ id: item.id, quantity: 5 }] };
    const now = '2026-03-11T06:30:15.400Z';

    const preview = await change(orgId, subscription.id, { ...body, preview: true }, now);
    expect((await getSubscription(database.db, orgId, subscription.id)).items[0]!.quantity).toBe(2);
    expect(await outbox(database.db, orgId, 'subscription.updated')).toEqual([]);

    const applied = await change(orgId, subscription.id, body, now);
    // left: Mar 11 06:30:15 -> Apr 1 = 1,790,985 s of 2,678,400 s (31 days)
    // credit 20.00 x 1790985/2678400 = 13.3736 -> 13.37; charge 50.00 x ... = 33.4341 -> 33.43
    expect(applied.proration_lines.map((line) => [line.quantity, line.unit_price, line.amount])).toEqual([
      ['2.0000', '10.00000000', '-13.37000000'],
      ['5.0000', '10.00000000', '33.43000000'],
    ]);
    expect(applied.proration_lines.every((line) => line.period_start === '2026-03-11T06:30:15.000Z')).toBe(
      true,
    );
    expect(applied.proration_lines.every((line) => line.period_end === '2026-04-01T00:00:00.000Z')).toBe(
      true,
    );
    expect(applied.effective_at).toBe('2026-03-11T06:30:15.000Z');
    const { updated_at: _p, ...previewed } = preview.subscription;
    const { updated_at: _a, ...changed } = applied.subscription;
    expect({ ...preview, subscription: previewed }).toEqual({ ...applied, subscription: changed });
    expect(applied.subscription.items.map((i) => [i.id, i.quantity])).toEqual([[item.id, 5]]);

    const [event] = await outbox(database.db, orgId, 'subscription.updated');
    // what receivers get is what the OpenAPI webhooks section documents
    expect(() => SubscriptionUpdatedEventData.parse(event!.data)).not.toThrow();
    expect(event!.data).toMatchObject({
      id: subscription.id,
      previous_items: [{ id: item.id, quantity: 2 }],
      items: [{ id: item.id, quantity: 5 }],
      effective_at: '2026-03-11T06:30:15.000Z',
    });

    // the upcoming invoice carries the lines already, as the run will
    const upcoming = await previewUpcomingInvoice(database.db, stores, orgId, subscription.id);
    expect(upcoming.lines.map((line) => line.amount)).toEqual(['20.00000000', '-13.37000000', '33.43000000']);
    expect([upcoming.subtotal, upcoming.tax, upcoming.total]).toEqual([
      '40.06000000',
      '5.21000000',
      '45.27000000',
    ]);

    const march = await billAt(orgId, '2026-04-01T00:00:00Z');
    // base 2 x 10.00 = 20.00, -13.37, +33.43: 40.06; HST 5.2078 -> 5.21; total 45.27
    expect(await invoiceLines(orgId, march.invoice_ids[0]!)).toEqual({
      lines: [
        ['Seats', '2.0000', '20.00000000'],
        ['Unused time on 2 x Seats, 2026-03-11 to 2026-03-31', '2.0000', '-13.37000000'],
        ['Remaining time on 5 x Seats, 2026-03-11 to 2026-03-31', '5.0000', '33.43000000'],
      ],
      subtotal: '40.06000000',
      tax: '5.21000000',
      total: '45.27000000',
    });
    const april = await billAt(orgId, '2026-05-01T00:00:00Z');
    expect(await invoiceLines(orgId, april.invoice_ids[0]!)).toEqual({
      lines: [['Seats', '5.0000', '50.00000000']],
      subtotal: '50.00000000',
      tax: '6.50000000',
      total: '56.50000000',
    });
  });

  it("a period's invoice carries the changes' lines in the order they were made, wherever a row lies", async () => {
    const { orgId, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    await change(orgId, subscription.id, { items: [{ id, quantity: 5 }] }, '2026-03-11T00:00:00Z');
    await change(orgId, subscription.id, { items: [{ id, quantity: 3 }] }, '2026-03-21T00:00:00Z');
    const linesWhereTheyLie = async () =>
      (
        await database.db.query<{ id: string }>(
          'SELECT id::text FROM subscription_proration_lines WHERE subscription_id = $1 ORDER BY ctid',
          [subscription.id],
        )
      ).rows.map((row) => row.id);
    const [first, ...rest] = await linesWhereTheyLie();
    // a rewritten row (as a line released from a withdrawn draft is) lies after the others
    await database.db.query(
      'UPDATE subscription_proration_lines SET description = description WHERE id = $1',
      [first],
    );
    expect(await linesWhereTheyLie()).toEqual([...rest, first]);

    // Mar 11 -> Apr 1: 21 of 31 days; Mar 21 -> Apr 1: 11 of 31
    const expected = [
      ['Seats', '2.0000', '20.00000000'],
      ['Unused time on 2 x Seats, 2026-03-11 to 2026-03-31', '2.0000', '-13.55000000'],
      ['Remaining time on 5 x Seats, 2026-03-11 to 2026-03-31', '5.0000', '33.87000000'],
      ['Unused time on 5 x Seats, 2026-03-21 to 2026-03-31', '5.0000', '-17.74000000'],
      ['Remaining time on 3 x Seats, 2026-03-21 to 2026-03-31', '3.0000', '10.65000000'],
    ];
    const march = await withoutIndexOrder(database.db, async (tx) => {
      const upcoming = await previewUpcomingInvoice(tx, stores, orgId, subscription.id);
      expect(upcoming.lines.map((line) => line.amount)).toEqual(expected.map((line) => line[2]));
      return runBilling(tx, { usage, orgId, now: at('2026-04-01T00:00:00Z') });
    });
    expect(march.failures).toEqual([]);
    expect((await invoiceLines(orgId, march.invoice_ids[0]!)).lines).toEqual(expected);
  });

  it('adds and removes metered items mid-period: usage while they were on, included units by time', async () => {
    const { orgId, customerId, seats, apiCalls, storage } = await setUp();
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }, { product_id: apiCalls, included_units: '100' }],
      start_date: at('2026-03-01T00:00:00Z'),
    });
    const [seat, calls] = subscription.items;
    // add Storage on Mar 11: 21 of 31 days left, 310 included -> 210
    const added = await change(
      orgId,
      subscription.id,
      { items: [{ id: seat!.id }, { id: calls!.id }, { product_id: storage, included_units: '310' }] },
      '2026-03-11T00:00:00Z',
    );
    expect(added.proration_lines).toEqual([]);
    const gb = added.subscription.items.find((i) => i.product_id === storage)!;
    // remove API calls on Mar 16 12:00: 15.5 of 31 days on, 100 included -> 50
    const removed = await change(
      orgId,
      subscription.id,
      { items: [{ id: seat!.id }, { id: gb.id }] },
      '2026-03-16T12:00:00Z',
    );
    expect(removed.subscription.items.map((i) => i.id)).toEqual([seat!.id, gb.id]);

    await recordUsage(database.db, orgId, calls!.id, '130', '2026-03-05T00:00:00Z'); // counted
    await recordUsage(database.db, orgId, calls!.id, '40', '2026-03-20T00:00:00Z'); // after its removal
    await recordUsage(database.db, orgId, gb.id, '500', '2026-03-05T00:00:00Z'); // before its start
    await recordUsage(database.db, orgId, gb.id, '400', '2026-03-25T00:00:00Z'); // counted

    const upcoming = await previewUpcomingInvoice(database.db, stores, orgId, subscription.id);
    expect(upcoming.total).toBe('123.17000000');
    const march = await billAt(orgId, '2026-04-01T00:00:00Z');
    // seats 10.00; calls 130 - 50 = 80 at 1.00 = 80.00; storage 400 - 210 = 190 at 0.10 = 19.00
    // subtotal 109.00, HST 14.17, total 123.17
    expect(await invoiceLines(orgId, march.invoice_ids[0]!)).toEqual({
      lines: [
        ['Seats', '1.0000', '10.00000000'],
        ['API calls (usage: 130 calls, 50 included)', '80.0000', '80.00000000'],
        ['Storage (usage: 400 GB, 210 included)', '190.0000', '19.00000000'],
      ],
      subtotal: '109.00000000',
      tax: '14.17000000',
      total: '123.17000000',
    });
    await recordUsage(database.db, orgId, gb.id, '320', '2026-04-10T00:00:00Z');
    const april = await billAt(orgId, '2026-05-01T00:00:00Z');
    // API calls gone; storage with its whole 310 included: 10 GB at 0.10 = 1.00
    expect((await invoiceLines(orgId, april.invoice_ids[0]!)).lines).toEqual([
      ['Seats', '1.0000', '10.00000000'],
      ['Storage (usage: 320 GB, 310 included)', '10.0000', '1.00000000'],
    ]);
  });

  it('downgrade without proration: the running period at the old terms, the next at the new', async () => {
    const { orgId, subscription } = await seatsFromMarch(4);
    const result = await change(
      orgId,
      subscription.id,
      { items: [{ id: subscription.items[0]!.id, quantity: 1 }], proration: 'none' },
      '2026-03-11T00:00:00Z',
    );
    expect(result.proration_lines).toEqual([]);
    const march = await billAt(orgId, '2026-04-01T00:00:00Z');
    expect((await invoiceLines(orgId, march.invoice_ids[0]!)).total).toBe('45.20000000'); // 40.00 + 5.20
    const april = await billAt(orgId, '2026-05-01T00:00:00Z');
    expect((await invoiceLines(orgId, april.invoice_ids[0]!)).total).toBe('11.30000000'); // 10.00 + 1.30
  });

  it('downgrade and removal in a quarter: credits never take the period below what was used', async () => {
    const { orgId, customerId } = await setUp();
    const quarterly = await productIn(database.db, orgId, {
      name: 'Support',
      unit_price: '300.00',
      pricing_type: 'recurring',
      currency: 'CAD',
      default_billing_period: 'quarterly',
    });
    const addOn = await productIn(database.db, orgId, {
      name: 'Add-on',
      unit_price: '90.00',
      pricing_type: 'recurring',
      currency: 'CAD',
      default_billing_period: 'quarterly',
    });
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: quarterly, quantity: 3 }, { product_id: addOn }],
      start_date: at('2026-01-31T00:00:00Z'),
    });
    const [support] = subscription.items;
    // quarter Jan 31 -> Apr 30 (anchor 31) = 89 d = 7,689,600 s; left from Mar 15 08:00 = 3,945,600 s
    // credit 900 x 3945600/7689600 = 461.797753 -> 461.80; charge 300 x ... = 153.932584 -> 153.93
    // add-on removed: credit 90 x ... = 46.179775 -> 46.18
    const result = await change(
      orgId,
      subscription.id,
      { items: [{ id: support!.id, quantity: 1 }] },
      '2026-03-15T08:00:00Z',
    );
    expect(result.proration_lines.map((line) => line.amount)).toEqual([
      '-461.80000000',
      '153.93000000',
      '-46.18000000',
    ]);
    const quarter = await billAt(orgId, '2026-04-30T00:00:00Z');
    // 900 + 90 - 461.80 + 153.93 - 46.18 = 635.95; HST 82.6735 -> 82.67; total 718.62
    expect(await invoiceLines(orgId, quarter.invoice_ids[0]!)).toMatchObject({
      subtotal: '635.95000000',
      tax: '82.67000000',
      total: '718.62000000',
    });
  });

  it('a scheduled change shows as pending_change, can be replaced, and the run applies it at the boundary', async () => {
    const { orgId, seats, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    await change(
      orgId,
      subscription.id,
      { items: [{ id, quantity: 5 }], effective: 'period_end' },
      '2026-03-11T00:00:00Z',
    );
    const replaced = await change(
      orgId,
      subscription.id,
      { items: [{ id, quantity: 7 }], effective: 'period_end' },
      '2026-03-12T00:00:00Z',
    );
    expect(replaced.proration_lines).toEqual([]);
    expect(replaced.effective_at).toBe('2026-04-01T00:00:00.000Z');
    expect(replaced.subscription.items[0]!.quantity).toBe(2);
    expect(replaced.subscription.pending_change).toEqual({
      items: [{ id, product_id: seats, quantity: 7, included_units: '0.00000000', usage_limit: null }],
      effective_at: '2026-04-01T00:00:00.000Z',
    });
    // a page of the list shows it as a read of the one subscription does
    const { data: listed } = await listSubscriptions(database.db, orgId, {}, { limit: 25, offset: 0 });
    expect(listed).toEqual([await getSubscription(database.db, orgId, subscription.id)]);
    expect(listed[0]!.pending_change).toEqual(replaced.subscription.pending_change);
    expect(await outbox(database.db, orgId, 'subscription.updated')).toEqual([]);

    const march = await billAt(orgId, '2026-04-01T00:00:00Z');
    expect((await invoiceLines(orgId, march.invoice_ids[0]!)).total).toBe('22.60000000'); // 2 x 10 + 13 %
    const after = await getSubscription(database.db, orgId, subscription.id);
    expect(after.items.map((i) => i.quantity)).toEqual([7]);
    expect(after.pending_change).toBeNull();
    const [event] = await outbox(database.db, orgId, 'subscription.updated');
    expect(event!.data).toMatchObject({
      previous_items: [{ quantity: 2 }],
      items: [{ quantity: 7 }],
      effective_at: '2026-04-01T00:00:00.000Z',
    });
    const april = await billAt(orgId, '2026-05-01T00:00:00Z');
    expect((await invoiceLines(orgId, april.invoice_ids[0]!)).total).toBe('79.10000000'); // 70 + 9.10
  });

  it('a trialing subscription changes without proration; a termed one keeps its term', async () => {
    const { orgId, customerId, seats } = await setUp();
    const trial = await subscribe(
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
    const changed = await change(
      orgId,
      trial.id,
      { items: [{ id: trial.items[0]!.id, quantity: 3 }] },
      '2026-03-05T00:00:00Z',
    );
    expect(changed.proration_lines).toEqual([]);
    await billAt(orgId, '2026-03-15T00:00:00Z');
    const first = await billAt(orgId, '2026-04-15T00:00:00Z');
    expect((await invoiceLines(orgId, first.invoice_ids[0]!)).total).toBe('33.90000000'); // 30 + 3.90

    const termed = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      term_type: 'termed',
      initial_term_months: 12,
      start_date: at('2026-03-01T00:00:00Z'),
    });
    const result = await change(
      orgId,
      termed.id,
      { items: [{ id: termed.items[0]!.id, quantity: 2 }] },
      '2026-03-20T00:00:00Z',
    );
    expect(result.subscription.subscription_end_date).toBe(termed.subscription_end_date);
    expect(result.subscription.term_type).toBe('termed');
  });

  it('changes of one subscription from two processes: the version condition orders them', async () => {
    const { orgId, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    // a pool of its own: another api process, which this one's per-subscription queue cannot see
    const other = new Database(database.url, { poolSize: 4, preparedStatements: true });
    try {
      const results = await Promise.all(
        [3, 4, 5, 6].map((quantity, n) =>
          changeSubscription(n % 2 ? other : database.db, {
            subscriptionId: subscription.id,
            orgId,
            change: { items: [{ id, quantity }] },
            now: at('2026-03-11T00:00:00Z'),
          }),
        ),
      );
      const { rows } = await database.db.query<{ quantity: string }>(
        'SELECT quantity FROM subscription_proration_lines WHERE subscription_id = $1 ORDER BY id',
        [subscription.id],
      );
      const lines = rows.map((row) => row.quantity);
      // every credit is for what the change before left: none was lost, none applied twice
      expectChainedLines(lines, 4, '2.0000');
      expect(results.map((result) => `${result.subscription.items[0]!.quantity}.0000`).sort()).toEqual(
        [1, 3, 5, 7].map((n) => lines[n]).sort(),
      );
    } finally {
      await other.close();
    }
  });

  it('a change losing its write five rounds in a row gives up with a 409; one losing four applies', async () => {
    const { orgId, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    /**
     * The change's statements on this test's database, with another writer committing a change of
     * the subscription (a new row version) right after each of the first `times` reads: each such
     * round's write finds its version gone and writes nothing.
     */
    const racedBy = (times: number) => {
      const raced = { reads: 0 };
      const db: Queryable = {
        async query(text, values) {
          const result = await database.db.query(text, values);
          if (text.includes('s.xmin::text AS version') && raced.reads++ < times) {
            await database.db.query('UPDATE subscriptions SET updated_at = now() WHERE id = $1', [
              subscription.id,
            ]);
          }
          return result as never;
        },
      };
      return { db, raced };
    };
    const lines = async () =>
      (
        await database.db.query('SELECT 1 FROM subscription_proration_lines WHERE subscription_id = $1', [
          subscription.id,
        ])
      ).rowCount;
    // a scheduled change, which an applied immediate change drops, and one that gave up leaves
    await change(
      orgId,
      subscription.id,
      { items: [{ id, quantity: 7 }], effective: 'period_end' },
      '2026-03-10T00:00:00Z',
    );
    const scheduled = async () => (await getSubscription(database.db, orgId, subscription.id)).pending_change;
    const always = racedBy(Number.POSITIVE_INFINITY);
    await expect(
      changeSubscription(always.db, {
        subscriptionId: subscription.id,
        orgId,
        change: { items: [{ id, quantity: 3 }] },
        now: at('2026-03-11T00:00:00Z'),
      }),
    ).rejects.toMatchObject({ status: 409, message: expect.stringContaining('kept changing') });
    expect(always.raced.reads).toBe(5);
    expect(await lines()).toBe(0);
    expect((await getSubscription(database.db, orgId, subscription.id)).items[0]!.quantity).toBe(2);
    expect(await scheduled()).toMatchObject({ items: [{ id, quantity: 7 }] });
    expect(await outbox(database.db, orgId, 'subscription.updated')).toEqual([]);
    // nor does a scheduled change that gave up replace the one scheduled
    await expect(
      changeSubscription(racedBy(Number.POSITIVE_INFINITY).db, {
        subscriptionId: subscription.id,
        orgId,
        change: { items: [{ id, quantity: 9 }], effective: 'period_end' },
        now: at('2026-03-11T00:00:00Z'),
      }),
    ).rejects.toMatchObject({ status: 409 });
    expect(await scheduled()).toMatchObject({ items: [{ id, quantity: 7 }] });

    const fourTimes = racedBy(4);
    const applied = await changeSubscription(fourTimes.db, {
      subscriptionId: subscription.id,
      orgId,
      change: { items: [{ id, quantity: 3 }] },
      now: at('2026-03-11T00:00:00Z'),
    });
    expect(fourTimes.raced.reads).toBe(5);
    expect(applied.subscription.items[0]!.quantity).toBe(3);
    expect(await lines()).toBe(2);
    expect(await scheduled()).toBeNull();
    expect(await outbox(database.db, orgId, 'subscription.updated')).toHaveLength(1);
  });

  it('two changes at once: one waits for the other and applies on what it left', async () => {
    const { orgId, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    const results = await Promise.all([
      change(orgId, subscription.id, { items: [{ id, quantity: 3 }] }, '2026-03-11T00:00:00Z'),
      change(orgId, subscription.id, { items: [{ id, quantity: 4 }] }, '2026-03-11T00:00:00Z'),
    ]);
    const lines = results.map((result) => result.proration_lines.map((line) => line.quantity));
    // whichever went first, the second's credit is for what the first left: never a lost update
    const [firstLines, secondLines] = lines[0]![0] === '2.0000' ? lines : [lines[1]!, lines[0]!];
    expect(firstLines![0]).toBe('2.0000');
    expect(secondLines![0]).toBe(firstLines![1]);
    const final = await getSubscription(database.db, orgId, subscription.id);
    expect(final.items[0]!.quantity).toBe(Number(secondLines![1]));
    // 21 of 31 days left: the lines add up to (final - 2) seats for that time, within a cent per line
    const { rows } = await database.db.query<{ sum: string }>(
      'SELECT sum(amount) AS sum FROM subscription_proration_lines WHERE subscription_id = $1',
      [subscription.id],
    );
    const exact = ((final.items[0]!.quantity - 2) * 10 * 21) / 31;
    expect(Math.abs(Number(rows[0]!.sum) - exact)).toBeLessThanOrEqual(0.02);
  });

  it('a burst of changes of one subscription from one process: each waits its turn, none gives up', async () => {
    const { orgId, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    // more than the rounds a change may lose: the process lines them up instead of racing them
    const quantities = [3, 4, 5, 6, 7, 8, 9];
    const results = await Promise.all(
      quantities.map((quantity) =>
        change(orgId, subscription.id, { items: [{ id, quantity }] }, '2026-03-11T00:00:00Z'),
      ),
    );
    expect(results.map((result) => result.subscription.items[0]!.quantity)).toEqual(quantities);
    const { rows } = await database.db.query<{ quantity: string }>(
      'SELECT quantity FROM subscription_proration_lines WHERE subscription_id = $1 ORDER BY id',
      [subscription.id],
    );
    expectChainedLines(
      rows.map((row) => row.quantity),
      quantities.length,
      '2.0000',
    );
  });

  it('many changes at once share statements; each applies once, on what the one before left', async () => {
    const { orgId, customerId, seats } = await setUp();
    const subscriptions = await Promise.all(
      Array.from({ length: 8 }, () =>
        subscribe(database.db, orgId, {
          customer_id: customerId,
          items: [{ product_id: seats, quantity: 2 }],
          start_date: at('2026-03-01T00:00:00Z'),
        }),
      ),
    );
    const [busy] = subscriptions;
    // one change per subscription, and three more of the first among them
    const asked = [
      ...subscriptions.map((subscription, n) => ({ subscription, quantity: 3 + n })),
      ...[20, 21, 22].map((quantity) => ({ subscription: busy!, quantity })),
    ];
    const changes = await Promise.all(
      asked.map(({ subscription, quantity }) =>
        change(
          orgId,
          subscription.id,
          { items: [{ id: subscription.items[0]!.id, quantity }] },
          '2026-03-11T00:00:00Z',
        ),
      ),
    );
    for (const [n, result] of changes.entries()) {
      expect(result.subscription.items[0]!.quantity).toBe(asked[n]!.quantity);
    }
    const { rows } = await database.db.query<{ subscription_id: number; quantity: string }>(
      `SELECT subscription_id, quantity FROM subscription_proration_lines
        WHERE subscription_id = ANY($1::bigint[]) ORDER BY id`,
      [subscriptions.map((subscription) => subscription.id)],
    );
    for (const [n, subscription] of subscriptions.entries()) {
      const lines = rows.filter((row) => row.subscription_id === subscription.id).map((row) => row.quantity);
      const final = (await getSubscription(database.db, orgId, subscription.id)).items[0]!.quantity;
      if (n > 0) {
        expect(lines).toEqual(['2.0000', `${3 + n}.0000`]);
        expect(final).toBe(3 + n);
        continue;
      }
      // four changes of one subscription, in some order: each credit is for what the one before left
      expectChainedLines(lines, 4, '2.0000');
      expect(`${final}.0000`).toBe(lines[7]);
    }
    const events = await database.db.query(
      `SELECT 1 FROM outbox WHERE org_id = $1 AND event_type = 'subscription.updated'`,
      [orgId],
    );
    expect(events.rowCount).toBe(asked.length);
  });

  it('a change during a billing run waits for it, then lands in the new period', async () => {
    const { orgId, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    let changed: Promise<unknown> | undefined;
    await database.db.transaction(async (tx) => {
      const summary = await runBilling(tx, { usage, orgId, now: at('2026-04-01T00:00:00Z') });
      expect(summary.invoices_created).toBe(1);
      // the run holds the row: the change waits for its commit
      changed = change(orgId, subscription.id, { items: [{ id, quantity: 5 }] }, '2026-04-11T00:00:00Z');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(
        (
          await tx.query('SELECT 1 FROM subscription_proration_lines WHERE subscription_id = $1', [
            subscription.id,
          ])
        ).rowCount,
      ).toBe(0);
    });
    const result = (await changed) as Awaited<ReturnType<typeof change>>;
    // in April (30 days), 20 left: credit 20 x 2/3 = 13.33, charge 50 x 2/3 = 33.33
    expect(result.proration_lines.map((line) => line.amount)).toEqual(['-13.33000000', '33.33000000']);
    const { rows } = await database.db.query<{ total: string }>(
      `SELECT total FROM invoices WHERE subscription_id = $1 ORDER BY period_start`,
      [subscription.id],
    );
    expect(rows.map((row) => row.total)).toEqual(['22.60000000']); // March untouched by the change
  });

  it('refuses what cannot be applied, writing nothing', async () => {
    const { orgId, customerId, seats, apiCalls } = await setUp();
    const other = await setUp();
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }, { product_id: apiCalls }],
      start_date: at('2026-03-01T00:00:00Z'),
    });
    const sibling = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: at('2026-03-01T00:00:00Z'),
    });
    const [seat, calls] = subscription.items;
    const now = '2026-03-11T00:00:00Z';
    const failure = (body: unknown, subscriptionId = subscription.id, org = orgId) =>
      change(org, subscriptionId, body, now).then(
        () => undefined,
        (error: { status: number; details?: { field: string }[] }) => ({
          status: error.status,
          fields: error.details?.map((detail) => detail.field),
        }),
      );
    expect(await failure({ items: [{ id: seat!.id }] }, subscription.id, other.orgId)).toMatchObject({
      status: 404,
    });
    expect(await failure({ items: [{ id: 999_999_999 }] })).toMatchObject({ status: 404 });
    expect(await failure({ items: [{ product_id: other.seats }] })).toMatchObject({ status: 404 });
    expect(
      await failure({
        items: [
          { id: seat!.id, quantity: 0 },
          { id: calls!.id, quantity: 2 },
          { id: sibling.items[0]!.id },
          { id: seat!.id },
        ],
      }),
    ).toEqual({ status: 422, fields: ['items.0.quantity', 'items.3.id'] });
    expect(
      await failure({
        items: [{ id: seat!.id }, { id: calls!.id, quantity: 2 }, { id: sibling.items[0]!.id }],
      }),
    ).toEqual({ status: 422, fields: ['items.1.quantity', 'items.2.id'] });
    const usd = await productIn(database.db, orgId, {
      name: 'USD seat',
      unit_price: '1',
      pricing_type: 'recurring',
      currency: 'USD',
    });
    expect(await failure({ items: [{ id: seat!.id }, { product_id: usd }] })).toEqual({
      status: 422,
      fields: ['items.1.product_id'],
    });
    await database.db.query('UPDATE products SET is_active = false WHERE id = $1', [usd]);
    expect(await failure({ items: [{ id: seat!.id }, { product_id: usd }] })).toEqual({
      status: 422,
      fields: ['items.1.product_id', 'items.1.product_id'],
    });
    expect(
      await failure({ items: [{ id: seat!.id, quantity: 1_000_000 }, { id: calls!.id }] }),
    ).toBeUndefined(); // fits
    const huge = await productIn(database.db, orgId, {
      name: 'Huge',
      unit_price: '99999999999',
      pricing_type: 'recurring',
      currency: 'CAD',
    });
    expect(await failure({ items: [{ product_id: huge, quantity: 1000 }] })).toEqual({
      status: 422,
      fields: ['items.0.quantity'],
    });
    await database.db.query(`UPDATE subscriptions SET status = 'canceled' WHERE id = $1`, [sibling.id]);
    expect(await failure({ items: [{ id: sibling.items[0]!.id }] }, sibling.id)).toMatchObject({
      status: 409,
    });
    const { rows } = await database.db.query(
      'SELECT quantity FROM subscription_items WHERE subscription_id = $1 AND removed_at IS NULL ORDER BY id',
      [subscription.id],
    );
    expect(rows).toEqual([{ quantity: 1_000_000 }, { quantity: 1 }]);
  });

  it('adds an item with the usage limit its entry gives, stored on the item', async () => {
    const { orgId, subscription, storage } = await seatsFromMarch(2);
    const seat = subscription.items[0]!;
    await change(
      orgId,
      subscription.id,
      { items: [{ id: seat.id }, { product_id: storage, usage_limit: '500' }] },
      '2026-03-11T00:00:00Z',
    );
    const { rows } = await database.db.query<{ usage_limit: string | null }>(
      'SELECT usage_limit::text FROM subscription_items WHERE subscription_id = $1 AND product_id = $2',
      [subscription.id, storage],
    );
    expect(rows).toEqual([{ usage_limit: '500.00000000' }]);
  });

  it('refuses a change whose running period, with the lines waiting for its invoice, no invoice can hold', async () => {
    const fit = [expect.objectContaining({ field: 'items', code: 'out_of_range' })];
    // lines earlier changes of the period left, ending with the period, as those changes wrote them
    const waiting = async (...amounts: string[]) => {
      const { orgId, subscription } = await seatsFromMarch(2);
      const seat = subscription.items[0]!;
      for (const amount of amounts) {
        await database.db.query(
          `INSERT INTO subscription_proration_lines (org_id, subscription_id, subscription_item_id, product_id,
             description, quantity, unit_price, amount, period_start, period_end)
           VALUES ($1, $2, $3, $4, 'An earlier change', 1, $5, $5, '2026-03-05T00:00:00Z', '2026-04-01T00:00:00Z')`,
          [orgId, subscription.id, seat.id, seat.product_id, amount],
        );
      }
      return change(
        orgId,
        subscription.id,
        { items: [{ id: seat.id, quantity: 5 }] },
        '2026-03-11T00:00:00Z',
      ).then(
        () => undefined,
        (error: { status: number; details?: unknown }) => ({ status: error.status, details: error.details }),
      );
    };
    // 869,565,217,370 + 20.00 of seats + this change's lines, plus 15 % tax: past 999,999,999,999.99999999
    expect(await waiting('869565217370.00000000')).toEqual({ status: 422, details: fit });
    // the total fits, but a credit of 900,000,000,000 with its tax is more than an invoice line can hold
    expect(await waiting('800000000000.00000000', '-900000000000.00000000')).toEqual({
      status: 422,
      details: fit,
    });
    // small lines are no bar
    expect(await waiting('5.00000000', '-1.00000000')).toBeUndefined();
  });

  it('refuses a change of an expired subscription, of a period that ended uninvoiced, and a pending one for its period end', async () => {
    const { orgId, customerId, seats } = await setUp();
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: at('2026-03-01T00:00:00Z'),
    });
    const seat = subscription.items[0]!;
    const status = (id: number, body: Record<string, unknown>, now: string) =>
      change(orgId, id, { preview: true, ...body }, now).then(
        () => 200,
        (error: { status: number }) => error.status,
      );
    const twoSeats = { items: [{ id: seat.id, quantity: 2 }] };
    // a period ends at its end instant: from then on it must be invoiced before the items change
    expect(await status(subscription.id, twoSeats, '2026-03-31T23:59:59Z')).toBe(200);
    expect(await status(subscription.id, twoSeats, '2026-04-01T00:00:00Z')).toBe(409);
    // expired is final, as canceled is
    const expired = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: at('2026-03-01T00:00:00Z'),
    });
    await database.db.query(`UPDATE subscriptions SET status = 'expired' WHERE id = $1`, [expired.id]);
    expect(
      await status(
        expired.id,
        { items: [{ id: expired.items[0]!.id, quantity: 2 }] },
        '2026-03-11T00:00:00Z',
      ),
    ).toBe(409);
    // a subscription that has not started changes now (its items apply from its start), never at its period end
    const pending = await subscribe(
      database.db,
      orgId,
      { customer_id: customerId, items: [{ product_id: seats }], start_date: at('2026-05-01T00:00:00Z') },
      at('2026-03-11T00:00:00Z'),
    );
    expect(pending.status).toBe('pending');
    const pendingSeats = { items: [{ id: pending.items[0]!.id, quantity: 2 }] };
    expect(await status(pending.id, pendingSeats, '2026-03-11T00:00:00Z')).toBe(200);
    expect(
      await status(pending.id, { ...pendingSeats, effective: 'period_end' }, '2026-03-11T00:00:00Z'),
    ).toBe(409);
  });

  it('a change that changes nothing writes nothing and emits nothing, now or at the boundary', async () => {
    const { orgId, customerId, seats, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    const version = async () =>
      (
        await database.db.query<{ version: string }>(
          'SELECT xmin::text AS version FROM subscriptions WHERE id = $1',
          [subscription.id],
        )
      ).rows[0]!.version;
    // another subscription's scheduled change is not this one's to drop: still nothing to write
    const sibling = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats, quantity: 2 }],
      start_date: at('2026-03-01T00:00:00Z'),
    });
    await change(
      orgId,
      sibling.id,
      { items: [{ id: sibling.items[0]!.id }], effective: 'period_end' },
      '2026-03-10T00:00:00Z',
    );
    const before = await version();
    for (const body of [
      { items: [{ id }] },
      { items: [{ id, quantity: 2 }], proration: 'none' },
      { items: [{ id, quantity: 2, included_units: '0' }] },
    ]) {
      const unchanged = await change(orgId, subscription.id, body, '2026-03-11T00:00:00Z');
      expect(unchanged.proration_lines).toEqual([]);
      // the subscription as it is: nothing written, updated_at included
      expect(unchanged.subscription).toEqual(await getSubscription(database.db, orgId, subscription.id));
    }
    expect(await version()).toBe(before);
    expect(await outbox(database.db, orgId, 'subscription.updated')).toEqual([]);

    // an immediate change still drops a scheduled one (it supersedes it), with no event
    await change(
      orgId,
      subscription.id,
      { items: [{ id, quantity: 5 }], effective: 'period_end' },
      '2026-03-12T00:00:00Z',
    );
    const unscheduled = await change(orgId, subscription.id, { items: [{ id }] }, '2026-03-13T00:00:00Z');
    expect(unscheduled.subscription.pending_change).toBeNull();
    // the sibling's stays: it was not this change's to drop
    expect((await getSubscription(database.db, orgId, sibling.id)).pending_change).toEqual({
      items: [
        {
          id: sibling.items[0]!.id,
          product_id: seats,
          quantity: 2,
          included_units: '0.00000000',
          usage_limit: null,
        },
      ],
      effective_at: '2026-04-01T00:00:00.000Z',
    });
    expect(await getSubscription(database.db, orgId, subscription.id)).toEqual(unscheduled.subscription);
    expect(await outbox(database.db, orgId, 'subscription.updated')).toEqual([]);

    // a scheduled set that keeps the items as they are: applied at the boundary, with no event
    const scheduled = await change(
      orgId,
      subscription.id,
      { items: [{ id, quantity: 2 }], effective: 'period_end' },
      '2026-03-14T00:00:00Z',
    );
    expect(scheduled.subscription.pending_change?.items).toEqual([
      { id, product_id: seats, quantity: 2, included_units: '0.00000000', usage_limit: null },
    ]);
    await billAt(orgId, '2026-04-01T00:00:00Z');
    const after = await getSubscription(database.db, orgId, subscription.id);
    expect(after.pending_change).toBeNull();
    expect(after.items.map((item) => [item.id, item.quantity])).toEqual([[id, 2]]);
    expect(await outbox(database.db, orgId, 'subscription.updated')).toEqual([]);
  });

  it("a run catching up several periods bills those from a change's boundary at the new items", async () => {
    const { orgId, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    await change(
      orgId,
      subscription.id,
      { items: [{ id, quantity: 5 }], effective: 'period_end' },
      '2026-03-10T00:00:00Z',
    );
    // no run on April 1 nor May 1: one run bills March, April and May
    const run = await billAt(orgId, '2026-06-01T00:00:00Z');
    const totals = await invoiceTotals(orgId, run.invoice_ids);
    // March at 2 seats (20 + 13 %), April and May at 5 (50 + 13 %): as runs on time would have
    expect(totals).toEqual(['22.60000000', '56.50000000', '56.50000000']);
    const after = await getSubscription(database.db, orgId, subscription.id);
    expect([after.items.map((item) => [item.id, item.quantity]), after.pending_change]).toEqual([
      [[id, 5]],
      null,
    ]);
    const updated = await outbox(database.db, orgId, 'subscription.updated');
    expect(updated.map((event) => event.data)).toMatchObject([
      {
        previous_items: [{ quantity: 2 }],
        items: [{ quantity: 5 }],
        effective_at: '2026-04-01T00:00:00.000Z',
      },
    ]);
    const june = await billAt(orgId, '2026-07-01T00:00:00Z');
    expect((await invoiceLines(orgId, june.invoice_ids[0]!)).total).toBe('56.50000000');
  });

  it('a catch-up run applies a change before the term ends, and a change for the term end is refused', async () => {
    const { orgId, customerId, seats } = await setUp();
    // a two-month term, no renewal: billed late, one run invoices March and April and expires it
    const subscription = await twoMonthTerm(orgId, customerId, seats);
    const id = subscription.items[0]!.id;
    await change(
      orgId,
      subscription.id,
      { items: [{ id, quantity: 5 }], effective: 'period_end' },
      '2026-03-10T00:00:00Z',
    );
    const run = await billAt(orgId, '2026-05-01T00:00:00Z');
    expect([run.invoices_created, run.expired]).toEqual([2, 1]);
    const totals = await invoiceTotals(orgId, run.invoice_ids);
    expect(totals).toEqual(['22.60000000', '56.50000000']);
    const after = await getSubscription(database.db, orgId, subscription.id);
    expect([after.status, after.pending_change]).toEqual(['expired', null]);
    expect(after.items.map((item) => [item.id, item.quantity])).toEqual([[id, 5]]);
    expect(await outbox(database.db, orgId, 'subscription.updated')).toHaveLength(1);

    // April is the term's last period: a change for its end would never apply
    const last = await twoMonthTerm(orgId, customerId, seats);
    const lastSeat = { items: [{ id: last.items[0]!.id, quantity: 5 }], effective: 'period_end' };
    await billAt(orgId, '2026-04-01T00:00:00Z');
    await expect(change(orgId, last.id, lastSeat, '2026-04-10T00:00:00Z')).rejects.toMatchObject({
      status: 409,
    });
    // one stored for that end anyway (before this refusal existed) is dropped when the term ends
    await database.db.query(
      `INSERT INTO subscription_pending_changes (subscription_id, org_id, items, effective_at)
       VALUES ($1, $2, $3, '2026-05-01T00:00:00Z')`,
      [
        last.id,
        orgId,
        JSON.stringify([{ id: last.items[0]!.id, product_id: seats, quantity: 5, included_units: '0' }]),
      ],
    );
    const expiry = await billAt(orgId, '2026-05-01T00:00:00Z');
    expect([expiry.invoices_created, expiry.expired]).toEqual([1, 1]);
    const ended = await getSubscription(database.db, orgId, last.id);
    expect([ended.status, ended.pending_change, ended.items[0]!.quantity]).toEqual(['expired', null, 2]);
    expect(await outbox(database.db, orgId, 'subscription.updated')).toHaveLength(1);
  });

  it('a cancel drops the change scheduled for the period end; once set to cancel, none is taken', async () => {
    const { orgId, subscription } = await seatsFromMarch();
    const id = subscription.items[0]!.id;
    const fiveSeats = { items: [{ id, quantity: 5 }], effective: 'period_end' };
    await change(orgId, subscription.id, fiveSeats, '2026-03-10T00:00:00Z');
    const marked = await database.db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        atPeriodEnd: true,
        now: at('2026-03-12T00:00:00Z'),
      }),
    );
    expect([marked.cancel_at_period_end, marked.pending_change]).toEqual([true, null]);
    await expect(change(orgId, subscription.id, fiveSeats, '2026-03-13T00:00:00Z')).rejects.toMatchObject({
      status: 409,
    });
    const run = await billAt(orgId, '2026-04-01T00:00:00Z');
    expect([run.canceled, (await invoiceLines(orgId, run.invoice_ids[0]!)).total]).toEqual([
      1,
      '22.60000000',
    ]);
    const ended = await getSubscription(database.db, orgId, subscription.id);
    expect([ended.status, ended.pending_change, ended.items[0]!.quantity]).toEqual(['canceled', null, 2]);

    // canceled now: the change it had scheduled goes with it
    const other = await seatsFromMarch();
    const otherSeats = {
      items: [{ id: other.subscription.items[0]!.id, quantity: 5 }],
      effective: 'period_end',
    };
    await change(other.orgId, other.subscription.id, otherSeats, '2026-03-10T00:00:00Z');
    const canceled = await database.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: other.subscription.id, now: at('2026-03-16T00:00:00Z') }),
    );
    expect([canceled.status, canceled.pending_change]).toEqual(['canceled', null]);
    expect(await getSubscription(database.db, other.orgId, other.subscription.id)).toMatchObject({
      pending_change: null,
    });
    expect(await outbox(database.db, orgId, 'subscription.updated')).toEqual([]);
  });

  it('a preview draws no id: the items it would add have provisional ids, the sequence is untouched', async () => {
    const { orgId, customerId, seats, storage } = await setUp();
    const setup = await productIn(database.db, orgId, {
      name: 'Setup',
      pricing_type: 'one_time',
      unit_price: '90.00',
      currency: 'CAD',
    });
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats, quantity: 2 }],
      start_date: at('2026-03-01T00:00:00Z'),
    });
    const id = subscription.items[0]!.id;
    const [{ name: sequenceName }] = (
      await database.db.query<{ name: string }>(
        "SELECT pg_get_serial_sequence('subscription_items', 'id') AS name",
      )
    ).rows as [{ name: string }];
    const sequence = async () =>
      (
        await database.db.query<{ last_value: string; is_called: boolean }>(
          `SELECT last_value::text, is_called FROM ${sequenceName}`,
        )
      ).rows[0]!;
    const body = {
      items: [{ product_id: setup }, { id, quantity: 3 }, { product_id: storage, included_units: '10' }],
    };
    const drawn = await sequence();
    const now = '2026-03-11T00:00:00Z';
    const preview = await change(orgId, subscription.id, { ...body, preview: true }, now);
    expect(await sequence()).toEqual(drawn);
    // kept items by id, then the added ones in the order of the entries, as applied
    expect(preview.subscription.items.map((item) => [item.id, item.product_id])).toEqual([
      [id, seats],
      [-1, setup],
      [-2, storage],
    ]);
    expect(preview.proration_lines.map((line) => line.subscription_item_id)).toEqual([id, id, -1]);

    const applied = await change(orgId, subscription.id, body, now);
    const next = Number(drawn.last_value) + (drawn.is_called ? 1 : 0);
    expect(applied.subscription.items.map((item) => [item.id, item.product_id])).toEqual([
      [id, seats],
      [next, setup],
      [next + 1, storage],
    ]);
    // the preview equals what is applied but for the added items' ids
    const ids = new Map([
      [-1, next],
      [-2, next + 1],
    ]);
    const { updated_at: _p, ...previewed } = preview.subscription;
    const { updated_at: _a, ...changed } = applied.subscription;
    expect({
      ...previewed,
      items: previewed.items.map((item) => ({ ...item, id: ids.get(item.id) ?? item.id })),
    }).toEqual(changed);
    expect(
      preview.proration_lines.map((line) => ({
        ...line,
        subscription_item_id: ids.get(line.subscription_item_id) ?? line.subscription_item_id,
      })),
    ).toEqual(applied.proration_lines);
  });

  it('every invoice these tests made has payable amounts', async () => {
    expect(await expectPayableInvoices(database.db)).toBeGreaterThan(8);
  });
});
