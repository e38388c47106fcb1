import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling, usageSource } from '../../libs/billing/index.js';
import { addScaled, isInMinorUnits, parseMoney } from '../../libs/money/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { customerIn, productIn, subscribe } from './fixtures.js';

/*
 * Billing in currencies whose minor unit is not the cent, end to end: JPY (0 decimals) and KWD
 * (3 decimals). Every amount an invoice holds is in whole minor units, and the per-line tax
 * shares (invoices/invoice-lines.ts shareOut) add up to the invoice's tax exactly. Worked by hand
 * for a Quebec customer (GST 5 % and QST 9.975 %, each rounded once on the subtotal):
 *
 *   JPY: 3 x 1,234.5 = 3,703.5 -> 3,704; 7 x 999 = 6,993; 1 x 505 = 505; subtotal 11,202
 *        GST 560.1 -> 560, QST 1,117.40 -> 1,117: tax 1,677, total 12,879
 *        shares of 1,677 by line: 554.51, 1,046.89, 75.60, floored 554 + 1,046 + 75 = 1,675; the two
 *        yen left go to the largest remainders (.89, .60): 554, 1,047, 76
 *   KWD: the same figures a thousandth: 3.704, 6.993, 0.505; tax 1.677; shares 0.554, 1.047, 0.076
 */

let api: TestApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startTestApi({ redis: false });
  org = await createTestOrg(api.platform.db);
}, 60_000);
afterAll(() => api?.close());

async function billIn(currency: string, prices: [string, string, string]) {
  const db = api.platform.db;
  const products = [];
  for (const [index, price] of prices.entries()) {
    products.push(
      await productIn(db, org.orgId, {
        name: ['Seats', 'Storage', 'Support'][index]!,
        unit_price: price,
        pricing_type: 'recurring',
        currency,
      }),
    );
  }
  const customerId = await customerIn(db, org.orgId, { name: `${currency} buyer`, state_province: 'QC' });
  const subscription = await subscribe(db, org.orgId, {
    customer_id: customerId,
    items: [
      { product_id: products[0]!, quantity: 3 },
      { product_id: products[1]!, quantity: 7 },
      { product_id: products[2]!, quantity: 1 },
    ],
    start_date: new Date('2026-01-01T00:00:00Z'),
  });
  const run = await runBilling(db, {
    usage: usageSource(new PostgresUsageAggregator(db)),
    orgId: org.orgId,
    subscriptionIds: [subscription.id],
    now: new Date('2026-02-01T00:00:00Z'),
  });
  expect(run.failures).toEqual([]);
  const response = await api.request({
    method: 'GET',
    path: `/invoices/${run.invoice_ids[0]}`,
    key: org.apiKey,
  });
  expect(response.statusCode).toBe(200);
  return response.json().data as {
    id: string;
    currency: string;
    tax_amount: string;
    total: string;
    balance: string;
    items: { line_total_pre_tax: string; tax_amount: string; tax_type: string }[];
  };
}

describe.each([
  {
    currency: 'JPY',
    prices: ['1234.5', '999', '505'] as [string, string, string],
    lines: ['3704.00000000', '6993.00000000', '505.00000000'],
    taxes: ['554.00000000', '1047.00000000', '76.00000000'],
    totals: { tax_amount: '1677.00000000', total: '12879.00000000' },
    printed: '12,879 JPY',
  },
  {
    currency: 'KWD',
    prices: ['1.2345', '0.999', '0.505'] as [string, string, string],
    lines: ['3.70400000', '6.99300000', '0.50500000'],
    taxes: ['0.55400000', '1.04700000', '0.07600000'],
    totals: { tax_amount: '1.67700000', total: '12.87900000' },
    printed: '12.879 KWD',
  },
])('an invoice in $currency', ({ currency, prices, lines, taxes, totals, printed }) => {
  it('has every amount in whole minor units, and line taxes adding up to the tax exactly', async () => {
    const invoice = await billIn(currency, prices);
    expect(invoice).toMatchObject({ currency, ...totals, balance: totals.total });
    expect(invoice.items.map((item) => item.line_total_pre_tax)).toEqual(lines);
    expect(invoice.items.map((item) => item.tax_amount)).toEqual(taxes);
    // the lines' amounts and their taxes make the total, to the last minor unit
    expect(
      addScaled(
        ...invoice.items.map((item) => parseMoney(item.line_total_pre_tax)),
        parseMoney(invoice.tax_amount),
      ),
    ).toBe(parseMoney(invoice.total));
    for (const amount of [
      invoice.tax_amount,
      invoice.total,
      ...invoice.items.flatMap((item) => [item.line_total_pre_tax, item.tax_amount]),
    ]) {
      expect(isInMinorUnits(parseMoney(amount), currency), amount).toBe(true);
    }
    expect(addScaled(...invoice.items.map((item) => parseMoney(item.tax_amount)))).toBe(
      parseMoney(invoice.tax_amount),
    );
    expect(invoice.items.every((item) => item.tax_type === 'GST_QST')).toBe(true);

    // the printable invoice shows the minor unit's digits
    const html = await api.request({ method: 'GET', path: `/invoices/${invoice.id}/html`, key: org.apiKey });
    expect(html.statusCode).toBe(200);
    expect(html.body).toContain(printed);
  });
});
