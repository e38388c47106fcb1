import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCustomerCredit, recordPayment, runBilling, usageSource } from '../../libs/billing/index.js';
import { cancelSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { basicCatalog, customerIn, recordUsage, subscribe } from './fixtures.js';

/**
 * Issue 5 "done when": each step the console takes (trial, billing, payment, cancellation) is
 * visible through the public API with the right numbers.
 */

let api: TestApi;
let org: TestOrg;
let other: TestOrg;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  other = await createTestOrg(api.platform.db);
});
afterAll(() => api.close());

const get = async (path: string, key = org.apiKey) => {
  const response = await api.request({ method: 'GET', path, key });
  return { status: response.statusCode, body: response.json() };
};

describe('billing as the public API shows it', () => {
  it('trial, invoice, credit, payments and cancellation, step by step', async () => {
    const db = api.platform.db;
    const usage = usageSource(new PostgresUsageAggregator(db));
    const { seats, apiCalls } = await basicCatalog(db, org.orgId);
    const customerId = await customerIn(db, org.orgId, { state_province: 'BC' }); // GST 5 % + PST 7 %
    await addCustomerCredit(db, { customerId, amount: '10' });
    const start = new Date('2026-03-01T00:00:00Z');
    const created = await subscribe(
      db,
      org.orgId,
      {
        customer_id: customerId,
        items: [
          { product_id: seats, quantity: 3 },
          { product_id: apiCalls, included_units: '100' },
        ],
        trial_days: 7,
        start_date: start,
      },
      start,
    );

    const trialing = await get(`/subscriptions/${created.id}`);
    expect(trialing.status).toBe(200);
    expect(trialing.body.data).toMatchObject({
      status: 'trialing',
      trial_end_date: '2026-03-08T00:00:00.000Z',
      items: [
        {
          product_id: seats,
          quantity: 3,
          unit_price: '10.00000000',
          usage_type: 'licensed',
          included_units: '0.00000000',
        },
        { product_id: apiCalls, usage_type: 'metered', included_units: '100.00000000' },
      ],
    });

    const meteredId = created.items[1]!.id;
    await recordUsage(db, org.orgId, meteredId, '50', '2026-03-05T00:00:00Z'); // trial: never billed
    await recordUsage(db, org.orgId, meteredId, '260', '2026-03-20T00:00:00Z');
    await runBilling(db, { usage, orgId: org.orgId, now: new Date('2026-04-09T00:00:00Z') });

    const active = await get(`/subscriptions/${created.id}`);
    expect(active.body.data).toMatchObject({
      status: 'active',
      current_period_start: '2026-04-08T00:00:00.000Z',
      next_billing_date: '2026-05-08T00:00:00.000Z',
    });
    const list = await get(`/invoices?customer_id=${customerId}`);
    expect(list.body.pagination).toMatchObject({ total: 1, has_more: false });
    const invoice = list.body.data[0];
    // 3 x 10 + (260 - 100 = 160 calls: 100 x 1.00 + 60 x 0.50 = 130) = 160; GST + PST 12 % = 19.20
    expect(invoice).toMatchObject({
      object: 'invoice',
      invoice_number: 'INV-000001',
      subscription_id: created.id,
      period_start: '2026-03-08',
      period_end: '2026-04-07',
      invoice_date: '2026-04-08',
      due_date: '2026-05-08',
      status: 'PARTIALLY_PAID',
      tax_amount: '19.20000000',
      total: '179.20000000',
      amount_paid: '10.00000000',
      balance: '169.20000000',
      currency: 'CAD',
    });
    expect(
      invoice.items.map((i: { quantity: string; tax_type: string }) => [i.quantity, i.tax_type]),
    ).toEqual([
      ['3.0000', 'GST_PST'],
      ['160.0000', 'GST_PST'],
    ]);
    expect((await get(`/customers/${customerId}`)).body.data.credit_balance).toBe('0.00000000');

    await api.platform.db.transaction((tx) =>
      recordPayment(tx, { invoiceId: invoice.id, amount: '169.20', method: 'STRIPE', reference: 'pi_1' }),
    );
    const paid = await get(`/invoices/${invoice.id}`);
    expect(paid.body.data).toMatchObject({
      status: 'PAID',
      amount_paid: '179.20000000',
      balance: '0.00000000',
    });
    const timeline = await get(`/invoices/${invoice.id}/transactions`);
    expect(
      timeline.body.data.map((t: { type: string; amount: string; method: string }) => [
        t.type,
        t.amount,
        t.method,
      ]),
    ).toEqual([
      ['PAYMENT', '169.20000000', 'STRIPE'],
      ['CREDIT_MEMO', '10.00000000', 'EXTERNAL'],
    ]);

    await api.platform.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: created.id, now: new Date('2026-04-20T00:00:00Z') }),
    );
    const canceled = await get(`/subscriptions/${created.id}`);
    expect(canceled.body.data).toMatchObject({ status: 'canceled', ended_at: '2026-04-20T00:00:00.000Z' });
    expect(
      (await get(`/subscriptions?status=canceled`)).body.data.map((s: { id: number }) => s.id),
    ).toContain(created.id);

    // another organization's key sees none of it
    expect((await get(`/invoices/${invoice.id}`, other.apiKey)).status).toBe(404);
    expect((await get(`/subscriptions/${created.id}`, other.apiKey)).status).toBe(404);
  });
});
