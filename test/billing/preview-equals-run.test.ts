import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { previewUpcomingInvoice, runBilling, usageSource } from '../../libs/billing/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { PostgresUsageAggregator, type UsageReadStores } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { readStoresOver } from '../helpers/read-stores.js';
import { customerIn, productIn, recordUsage, subscribe } from './fixtures.js';

/**
 * docs/architecture.md, "The usage read-back": once a period has ended and no event changes, the invoice the billing run creates
 * equals the upcoming-invoice preview to the last digit, on every pricing mode and tax type. Both
 * compose it with composePeriodInvoice; this proves the inputs they give it are the same too.
 */

let database: TestDatabase;
let stores: UsageReadStores;

beforeAll(async () => {
  database = await createTestDatabase('preview_run');
  stores = readStoresOver(database.db);
});
afterAll(async () => {
  await stores.close();
  await database.drop();
});

const at = (iso: string) => new Date(iso);

/** One product of each pricing mode, metered unless said, all in `currency`. */
async function everyPricingMode(orgId: number, currency: string) {
  const db = database.db;
  return {
    licensed: await productIn(db, orgId, {
      name: 'Seats',
      unit_price: '12.34',
      pricing_type: 'recurring',
      currency,
      unit_label: 'seat',
    }),
    perUnit: await productIn(db, orgId, {
      name: 'Storage',
      unit_price: '0.0123',
      pricing_type: 'usage',
      currency,
      unit_label: 'GB',
    }),
    flatFee: await productIn(db, orgId, {
      name: 'Support',
      unit_price: '99.99',
      pricing_type: 'usage',
      pricing_model: 'flat_fee',
      currency,
      unit_label: 'ticket',
    }),
    volume: await productIn(db, orgId, {
      name: 'Messages',
      pricing_type: 'usage',
      pricing_mode: 'volume',
      currency,
      unit_label: 'msg',
      tiers: [
        { up_to: '100', unit_price: '0.10', flat_fee: '1' },
        { up_to: '1000', unit_price: '0.07', flat_fee: '2' },
        { up_to: null, unit_price: '0.05', flat_fee: '3' },
      ],
    }),
    graduated: await productIn(db, orgId, {
      name: 'API calls',
      pricing_type: 'usage',
      pricing_mode: 'graduated',
      currency,
      unit_label: 'call',
      tiers: [
        { up_to: '100', unit_price: '1.00' },
        { up_to: '250', unit_price: '0.75', flat_fee: '5' },
        { up_to: null, unit_price: '0.333' },
      ],
    }),
    flatTiers: await productIn(db, orgId, {
      name: 'Builds',
      pricing_type: 'usage',
      pricing_mode: 'flat',
      currency,
      unit_label: 'build',
      tiers: [
        { up_to: '10', unit_price: '0', flat_fee: '15' },
        { up_to: null, unit_price: '0', flat_fee: '40' },
      ],
    }),
  };
}

const customers = [
  { label: 'a Quebec customer (GST + QST)', country: 'CA', state_province: 'QC', currency: 'CAD' },
  { label: 'a US customer (state sales tax)', country: 'US', state_province: 'NY', currency: 'USD' },
];

// Usage that sits on and around tier boundaries, with included units taking part.
const USAGE: Record<string, string[]> = {
  perUnit: ['1234.56789', '0.00000001'],
  flatFee: ['1'],
  volume: ['60', '40'], // exactly 100: the first tier's bound
  graduated: ['150', '100.5'], // 250.5 - 0.5 included = 250: the second tier's bound
  flatTiers: ['10', '1'], // 11: just past the first tier
};

describe('the upcoming invoice equals the billing run invoice', () => {
  for (const customer of customers) {
    it(`on every pricing mode, for ${customer.label}`, async () => {
      const { orgId } = await createTestOrg(database.db);
      const products = await everyPricingMode(orgId, customer.currency);
      const customerId = await customerIn(database.db, orgId, {
        country: customer.country,
        state_province: customer.state_province,
      });
      const subscription = await subscribe(database.db, orgId, {
        customer_id: customerId,
        items: [
          { product_id: products.licensed, quantity: 3 },
          { product_id: products.perUnit },
          { product_id: products.flatFee },
          { product_id: products.volume },
          { product_id: products.graduated, included_units: '0.5' },
          { product_id: products.flatTiers },
        ],
        start_date: at('2026-01-15T00:00:00Z'),
      });
      const itemOf = (productId: number) => subscription.items.find((i) => i.product_id === productId)!.id;
      for (const [name, quantities] of Object.entries(USAGE)) {
        for (const quantity of quantities) {
          await recordUsage(
            database.db,
            orgId,
            itemOf(products[name as keyof typeof products]),
            quantity,
            '2026-01-20T12:00:00Z',
          );
        }
      }

      const preview = await previewUpcomingInvoice(database.db, stores, orgId, subscription.id);
      const summary = await runBilling(database.db, {
        usage: usageSource(new PostgresUsageAggregator(database.db)),
        orgId,
        now: at('2026-02-15T00:00:00Z'),
      });
      expect(summary.invoices_created).toBe(1);
      const invoice = await getInvoice(database.db, orgId, summary.invoice_ids[0]!);

      expect(preview.period_start).toBe('2026-01-15T00:00:00.000Z');
      expect(preview.period_end).toBe('2026-02-15T00:00:00.000Z');
      expect(preview.invoice_date).toBe(invoice.invoice_date);
      // the public invoice item does not name its subscription item: compare the rest
      expect(preview.lines.map(({ subscription_item_id: _, ...line }) => line)).toEqual(
        invoice.items.map((item) => ({
          description: item.description,
          product_id: item.product_id,
          quantity: item.quantity,
          unit_price: item.unit_price,
          amount: item.line_total_pre_tax,
        })),
      );
      const { rows } = await database.db.query<{ subtotal: string; tax_amount: string; total: string }>(
        'SELECT subtotal::text, tax_amount::text, total::text FROM invoices WHERE id = $1',
        [invoice.id],
      );
      expect([preview.subtotal, preview.tax, preview.total]).toEqual([
        rows[0]!.subtotal,
        rows[0]!.tax_amount,
        rows[0]!.total,
      ]);
      expect([invoice.tax_amount, invoice.total]).toEqual([preview.tax, preview.total]);
      expect(preview.tax_type).toBe(invoice.items[0]!.tax_type);
      // every mode took part: a line per item, amounts that are not all zero
      expect(preview.lines).toHaveLength(6);
      expect(preview.lines.every((line) => line.amount !== '0.00000000')).toBe(true);
    });
  }
});
