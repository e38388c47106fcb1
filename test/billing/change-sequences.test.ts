import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  previewUpcomingInvoice,
  runBilling,
  type UsageForTransaction,
  usageSource,
} from '../../libs/billing/index.js';
import type { NewProduct } from '../../libs/catalog/index.js';
import { formatMoney, parseMoney } from '../../libs/money/index.js';
import { changeSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator, type UsageReadStores } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { readStoresOver } from '../helpers/read-stores.js';
import { customerIn, productIn, subscribe } from './fixtures.js';

/*
 * Changes in a row where the first adds an item: what each change charges comes from what that
 * change did, never from what earlier changes left on the subscription. March 2026 has 31 days;
 * every change is on Mar 11 or later the same day, so an item added on Mar 11 00:00 has 21 of 31
 * days left: a product at 31.00 a period is charged 21.00 for them, exactly.
 */

let database: TestDatabase;
let usage: UsageForTransaction;
let stores: UsageReadStores;

beforeAll(async () => {
  database = await createTestDatabase('change_sequences');
  usage = usageSource(new PostgresUsageAggregator(database.db));
  stores = readStoresOver(database.db);
});
afterAll(async () => {
  await stores.close();
  await database.drop();
});

/** The product a first change adds, and what that one change must charge for it in March. */
const ADDED: Record<
  string,
  { product: NewProduct; quantity?: number; prorate: string | null; none: string | null }
> = {
  'a one-time fee': {
    product: { name: 'Onboarding', unit_price: '750.00', pricing_type: 'one_time', currency: 'CAD' },
    // charged once, in full, whatever the proration
    prorate: '750.00000000',
    none: '750.00000000',
  },
  'a linear recurring item': {
    product: { name: 'Analytics', unit_price: '31.00', pricing_type: 'recurring', currency: 'CAD' },
    prorate: '21.00000000',
    none: null,
  },
  'a tiered recurring item': {
    product: {
      name: 'Workspaces',
      pricing_type: 'recurring',
      pricing_mode: 'volume',
      currency: 'CAD',
      tiers: [
        { up_to: '10', unit_price: '6.20' },
        { up_to: null, unit_price: '3.10' },
      ],
    },
    quantity: 5, // 5 x 6.20 = 31.00 a period
    prorate: '21.00000000',
    none: null,
  },
  'a flat-fee recurring item': {
    product: {
      name: 'Platform',
      unit_price: '31.00',
      pricing_type: 'recurring',
      pricing_model: 'flat_fee',
      currency: 'CAD',
    },
    prorate: '21.00000000',
    none: null,
  },
  'a metered item': {
    product: {
      name: 'Storage',
      unit_price: '0.10',
      pricing_type: 'usage',
      currency: 'CAD',
      unit_label: 'GB',
    },
    // usage is billed by time, never by a charge line
    prorate: null,
    none: null,
  },
};

async function setUp(added: (typeof ADDED)[string]) {
  const { orgId } = await createTestOrg(database.db);
  const desk = await productIn(database.db, orgId, {
    name: 'Desks',
    unit_price: '31.00',
    pricing_type: 'recurring',
    currency: 'CAD',
  });
  const extra = await productIn(database.db, orgId, added.product);
  const customerId = await customerIn(database.db, orgId);
  const subscription = await subscribe(
    database.db,
    orgId,
    {
      customer_id: customerId,
      items: [{ product_id: desk, quantity: 2 }],
      start_date: new Date('2026-03-01T00:00:00Z'),
    },
    new Date('2026-03-01T00:00:00Z'),
  );
  return { orgId, extra, subscription, deskItem: subscription.items[0]!.id };
}

describe.each([2, 10])('%i changes in a row, the first adding an item', (changes) => {
  describe.each(Object.keys(ADDED))('%s', (kind) => {
    it.each(['prorate', 'none'] as const)(
      'with proration %s: one charge for the addition, on the invoice once',
      async (proration) => {
        const added = ADDED[kind]!;
        const { orgId, extra, subscription, deskItem } = await setUp(added);
        const first = await changeSubscription(database.db, {
          subscriptionId: subscription.id,
          orgId,
          change: {
            items: [
              { id: deskItem },
              { product_id: extra, ...(added.quantity ? { quantity: added.quantity } : {}) },
            ],
            proration,
          },
          now: new Date('2026-03-11T00:00:00Z'),
        });
        const addedItem = first.subscription.items.find((item) => item.product_id === extra)!;
        const expected = added[proration];
        expect(first.proration_lines.map((line) => [line.subscription_item_id, line.amount])).toEqual(
          expected === null ? [] : [[addedItem.id, expected]],
        );

        // then the desks are re-quantified, one more each time, minutes apart; the added item is kept
        const deskLines: string[] = [];
        for (let step = 1; step < changes; step++) {
          const later = await changeSubscription(database.db, {
            subscriptionId: subscription.id,
            orgId,
            change: { items: [{ id: deskItem, quantity: 2 + step }, { id: addedItem.id }], proration },
            now: new Date(Date.parse('2026-03-11T00:00:00Z') + step * 60_000),
          });
          expect(
            later.proration_lines.filter((line) => line.subscription_item_id === addedItem.id),
            `change ${step + 1} charges the item change 1 added`,
          ).toEqual([]);
          expect(later.proration_lines).toHaveLength(proration === 'prorate' ? 2 : 0);
          deskLines.push(...later.proration_lines.map((line) => line.amount));
        }

        const upcoming = await previewUpcomingInvoice(database.db, stores, orgId, subscription.id);
        const summary = await runBilling(database.db, {
          usage,
          orgId,
          now: new Date('2026-04-01T00:00:00Z'),
        });
        expect(summary.failures).toEqual([]);
        const { rows: lines } = await database.db.query<{
          subscription_item_id: string;
          description: string;
          line_total_pre_tax: string;
        }>(
          `SELECT ii.subscription_item_id::text, ii.description, ii.line_total_pre_tax::text
           FROM invoice_items ii WHERE ii.invoice_id = $1 ORDER BY ii.id`,
          [summary.invoice_ids[0]],
        );
        const addedLines = lines.filter((line) => line.subscription_item_id === String(addedItem.id));
        // a metered item's one line is its usage (none here), never a charge
        const metered = added.product.pricing_type === 'usage';
        expect(addedLines.map((line) => line.line_total_pre_tax)).toEqual(
          metered ? ['0.00000000'] : expected === null ? [] : [expected],
        );

        // the invoice: the desks' base (2 x 31.00), each later change's lines once, the addition once
        const subtotal = ['62.00000000', ...deskLines, ...(expected === null ? [] : [expected])].reduce(
          (sum, amount) => sum + parseMoney(amount),
          0n,
        );
        const { rows } = await database.db.query<{ subtotal: string; total: string }>(
          'SELECT subtotal::text, total::text FROM invoices WHERE id = $1',
          [summary.invoice_ids[0]],
        );
        expect(rows[0]!.subtotal).toBe(formatMoney(subtotal));
        // what the upcoming invoice said before the run is what the run billed
        expect(upcoming.subtotal).toBe(rows[0]!.subtotal);
        expect(upcoming.total).toBe(rows[0]!.total);
      },
    );
  });
});
