import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  previewUpcomingInvoice,
  runBilling,
  type UsageForTransaction,
  usageSource,
} from '../../libs/billing/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { cancelSubscription, changeSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator, type UsageReadStores } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { readStoresOver } from '../helpers/read-stores.js';
import { customerIn, productIn, subscribe } from './fixtures.js';

/*
 * A line's unit price is the price its amount was computed with, wherever lines are built: the
 * lines a change answers and stores, a one-time charge, the upcoming invoice, the invoice the run
 * makes and a cancel's final invoice. A tiered item's subscribed price is 0 (tiers price it), so a
 * line that showed it read "8 x 0.00 = 46.06". March 2026 has 31 days; the change is on Mar 11,
 * 21 days before its end.
 *
 *   Seats (graduated: 1-5 at 10.00, beyond at 6.00): 5 seats = 50.00 a period (10.00 each),
 *     8 seats = 68.00 (8.50 each). Credit 50.00 x 21/31 = 33.87; charge 68.00 x 21/31 = 46.06.
 *   Setup (one-time, graduated: the first at 100.00, beyond at 10.00): 3 = 120.00 (40.00 each).
 *   Platform (flat fee 31.00 a period, whatever the quantity): one fee, shown as 1 x 31.00.
 */

let database: TestDatabase;
let usage: UsageForTransaction;
let stores: UsageReadStores;

beforeAll(async () => {
  database = await createTestDatabase('line_unit_prices');
  usage = usageSource(new PostgresUsageAggregator(database.db));
  stores = readStoresOver(database.db);
});
afterAll(async () => {
  await stores.close();
  await database.drop();
});

async function setUp() {
  const { orgId } = await createTestOrg(database.db);
  const seats = await productIn(database.db, orgId, {
    name: 'Seats',
    pricing_type: 'recurring',
    pricing_mode: 'graduated',
    currency: 'CAD',
    tiers: [
      { up_to: '5', unit_price: '10.00' },
      { up_to: null, unit_price: '6.00' },
    ],
  });
  const setup = await productIn(database.db, orgId, {
    name: 'Setup',
    pricing_type: 'one_time',
    pricing_mode: 'graduated',
    currency: 'CAD',
    tiers: [
      { up_to: '1', unit_price: '100.00' },
      { up_to: null, unit_price: '10.00' },
    ],
  });
  const platform = await productIn(database.db, orgId, {
    name: 'Platform',
    unit_price: '31.00',
    pricing_type: 'recurring',
    pricing_model: 'flat_fee',
    currency: 'CAD',
  });
  const customerId = await customerIn(database.db, orgId, { country: 'CA', state_province: 'AB' });
  const subscription = await subscribe(
    database.db,
    orgId,
    {
      customer_id: customerId,
      items: [
        { product_id: seats, quantity: 5 },
        { product_id: platform, quantity: 2 },
      ],
      start_date: new Date('2026-03-01T00:00:00Z'),
    },
    new Date('2026-03-01T00:00:00Z'),
  );
  const [seatItem, platformItem] = subscription.items.map((item) => item.id);
  return { orgId, setup, subscription, seatItem: seatItem!, platformItem: platformItem! };
}

const shown = (lines: readonly { description: string; quantity: string; unit_price: string }[]) =>
  lines.map((line) => [line.description.replace(/,.*$/, ''), line.quantity, line.unit_price]);

describe('unit prices of lines', () => {
  it('a change, the upcoming invoice and the run show the price each line was computed with', async () => {
    const { orgId, setup, subscription, seatItem, platformItem } = await setUp();
    const changed = await changeSubscription(database.db, {
      subscriptionId: subscription.id,
      orgId,
      change: {
        items: [
          { id: seatItem, quantity: 8 },
          { id: platformItem, quantity: 3 },
          { product_id: setup, quantity: 3 },
        ],
      },
      now: new Date('2026-03-11T00:00:00Z'),
    });
    const expectedLines = [
      ['Unused time on 5 x Seats', '5.0000', '10.00000000', '-33.87000000'],
      ['Remaining time on 8 x Seats', '8.0000', '8.50000000', '46.06000000'],
      // a flat fee is one fee whatever the quantity: 2 -> 3 credits and charges the same fee
      ['Unused time on 2 x Platform', '1.0000', '31.00000000', '-21.00000000'],
      ['Remaining time on 3 x Platform', '1.0000', '31.00000000', '21.00000000'],
      ['Setup (one-time', '3.0000', '40.00000000', '120.00000000'],
    ];
    expect(
      changed.proration_lines.map((line) => [
        line.description.replace(/,.*$| added.*$/, ''),
        line.quantity,
        line.unit_price,
        line.amount,
      ]),
    ).toEqual(expectedLines);
    // what is stored for the next invoice is what was answered
    const { rows: stored } = await database.db.query<{ quantity: string; unit_price: string }>(
      `SELECT quantity::text, unit_price::text FROM subscription_proration_lines
        WHERE subscription_id = $1 ORDER BY id`,
      [subscription.id],
    );
    expect(stored.map((line) => [line.quantity, line.unit_price])).toEqual(
      expectedLines.map(([, quantity, unitPrice]) => [quantity, unitPrice]),
    );

    const periodLines = [
      // the period's base terms: 5 seats (10.00 each), the platform fee
      ['Seats', '5.0000', '10.00000000'],
      ['Platform', '1.0000', '31.00000000'],
      ...expectedLines.map(([description, quantity, unitPrice]) => [description, quantity, unitPrice]),
    ];
    const upcoming = await previewUpcomingInvoice(database.db, stores, orgId, subscription.id);
    expect(shown(upcoming.lines).map(([d, q, u]) => [d!.replace(/ added.*$/, ''), q, u])).toEqual(
      periodLines,
    );

    const summary = await runBilling(database.db, { usage, orgId, now: new Date('2026-04-01T00:00:00Z') });
    expect(summary.failures).toEqual([]);
    const invoice = await getInvoice(database.db, orgId, summary.invoice_ids[0]!);
    expect(shown(invoice.items).map(([d, q, u]) => [d!.replace(/ added.*$/, ''), q, u])).toEqual(periodLines);
    expect(invoice.total).toBe(upcoming.total);
  });

  it("a cancel's final invoice credits the rest of a tiered item at the price it had", async () => {
    const { orgId, subscription } = await setUp();
    const canceled = await database.db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        orgId,
        finalInvoice: { usage },
        now: new Date('2026-03-11T00:00:00Z'),
      }),
    );
    const invoice = await getInvoice(database.db, orgId, canceled.final_invoice_id!);
    expect(
      invoice.items.map((item) => [
        item.description.replace(/,.*$/, ''),
        item.quantity,
        item.unit_price,
        item.line_total_pre_tax,
      ]),
    ).toEqual([
      ['Seats', '5.0000', '10.00000000', '50.00000000'],
      ['Platform', '1.0000', '31.00000000', '31.00000000'],
      ['Unused time on 5 x Seats', '5.0000', '10.00000000', '-33.87000000'],
      ['Unused time on 2 x Platform', '1.0000', '31.00000000', '-21.00000000'],
    ]);
  });
});
