import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRefund,
  listCreditNotes,
  recordPayment,
  runBilling,
  usageSource,
  withdrawInvoice,
} from '../../libs/billing/index.js';
import { addScaled, formatMoney, isInMinorUnits, parseMoney } from '../../libs/money/index.js';
import type { CreditNote } from '../../libs/schemas/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import {
  creditBalance,
  customerIn,
  expectPayableInvoices,
  outbox,
  productIn,
  subscribe,
} from './fixtures.js';

/*
 * Credit notes through the public API (docs/decisions.md, "Credit notes"), on real Postgres.
 * Invoices are billed for January 2026 by the billing run. Worked by hand for a Quebec customer
 * (GST 5 %, QST 9.975 %, each rounded half-up on the taxable subtotal):
 *   invoice: 3 x 33.33 = 99.99, 1 x 7.77 = 7.77; subtotal 107.76; GST 5.388 -> 5.39,
 *            QST 10.74906 -> 10.75; tax 16.14; total 123.90
 *   note of 10.00 + 3.33 = 13.33: GST 0.6665 -> 0.67, QST 1.32966... -> 1.33; tax 2.00;
 *            shares of 2.00 by 10.00 : 3.33 -> 150.04 : 49.96 cents -> floors 150 + 49, the cent
 *            left to the larger remainder (.96): 1.50 and 0.50.
 */

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;

beforeAll(async () => {
  api = await startTestApi({ redis: false });
  orgA = await createTestOrg(api.platform.db);
  orgB = await createTestOrg(api.platform.db);
}, 60_000);
afterAll(() => api?.close());

const db = () => api.platform.db;

function post(path: string, body: unknown, key = orgA.apiKey) {
  return api.request({
    method: 'POST',
    path,
    key,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}
const get = (path: string, key = orgA.apiKey) => api.request({ method: 'GET', path, key });

interface Invoice {
  id: string;
  subscription_id: number;
  invoice_number: string;
  status: string;
  total: string;
  balance: string;
  amount_paid: string;
  tax_amount: string;
  currency: string;
  items: { id: number; line_total_pre_tax: string; tax_amount: string }[];
}

/** A posted January invoice of a fresh customer: lines at `prices` (quantity 3, then 1, 1, ...). */
async function invoiceFor(
  options: {
    org?: TestOrg;
    currency?: string;
    province?: string;
    country?: string;
    prices?: string[];
    post?: boolean;
  } = {},
): Promise<Invoice> {
  const org = options.org ?? orgA;
  const currency = options.currency ?? 'CAD';
  const prices = options.prices ?? ['33.33', '7.77'];
  const products = [];
  for (const [index, price] of prices.entries()) {
    products.push(
      await productIn(db(), org.orgId, {
        name: `Product ${index + 1}`,
        unit_price: price,
        pricing_type: 'recurring',
        currency,
      }),
    );
  }
  const customerId = await customerIn(
    db(),
    org.orgId,
    options.country
      ? { country: options.country, state_province: undefined }
      : { state_province: options.province ?? 'QC' },
  );
  const subscription = await subscribe(db(), org.orgId, {
    customer_id: customerId,
    items: products.map((product_id, index) => ({ product_id, quantity: index === 0 ? 3 : 1 })),
    start_date: new Date('2026-01-01T00:00:00Z'),
  });
  const run = await runBilling(db(), {
    usage: usageSource(new PostgresUsageAggregator(db())),
    orgId: org.orgId,
    subscriptionIds: [subscription.id],
    now: new Date('2026-02-01T00:00:00Z'),
    post: options.post ?? true,
  });
  expect(run.failures).toEqual([]);
  return invoice(run.invoice_ids[0]!, org);
}

async function invoice(id: string, org = orgA): Promise<Invoice> {
  const response = await get(`/invoices/${id}`, org.apiKey);
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data;
}

async function note(
  inv: Invoice,
  lines: [number, string][],
  reason = 'order_change',
  org = orgA,
): Promise<CreditNote> {
  const response = await creditRequest(inv, lines, reason, org);
  expect(response.statusCode, response.body).toBe(201);
  return response.json().data;
}

function creditRequest(inv: Invoice, lines: [number, string][], reason = 'order_change', org = orgA) {
  return post(
    `/invoices/${inv.id}/credit-notes`,
    {
      reason,
      lines: lines.map(([index, amount]) => ({ invoice_item_id: inv.items[index]!.id, amount })),
    },
    org.apiKey,
  );
}

function fieldsOf(response: { statusCode: number; body: string; json(): unknown }): string[] {
  expect(response.statusCode, response.body).toBe(422);
  const body = response.json() as { error_code: string; details: { field: string }[] };
  expect(body.error_code).toBe('VALIDATION_ERROR');
  return body.details.map((d) => d.field);
}

function messagesOf(response: { statusCode: number; body: string; json(): unknown }): string[] {
  expect(response.statusCode, response.body).toBe(422);
  return (response.json() as { details: { message: string }[] }).details.map((d) => d.message);
}

const sum = (values: string[]) => formatMoney(addScaled(...values.map(parseMoney)));

describe('issuing a credit note', () => {
  it('reverses the tax per component (GST + QST), shares it over the lines exactly, applies a credit memo', async () => {
    const inv = await invoiceFor();
    expect(inv).toMatchObject({ total: '123.90000000', tax_amount: '16.14000000', status: 'POSTED' });
    const made = await note(inv, [
      [0, '10.00'],
      [1, '3.33'],
    ]);
    expect(made).toMatchObject({
      object: 'credit_note',
      invoice_id: inv.id,
      currency: 'CAD',
      reason: 'order_change',
      memo: null,
      subtotal: '13.33000000',
      tax: '2.00000000',
      total: '15.33000000',
      applied_to_invoice: '15.33000000',
      credited_to_customer: '0.00000000',
      credit_grant_id: null,
    });
    expect(made.number).toMatch(/^CN-\d{6}$/);
    expect(made.tax_lines).toEqual([
      { name: 'GST', jurisdiction: 'CA', rate: '0.05', amount: '0.67000000' },
      { name: 'QST', jurisdiction: 'QC', rate: '0.09975', amount: '1.33000000' },
    ]);
    expect(made.lines.map((line) => [line.invoice_item_id, line.amount, line.tax_amount])).toEqual([
      [inv.items[0]!.id, '10.00000000', '1.50000000'],
      [inv.items[1]!.id, '3.33000000', '0.50000000'],
    ]);
    expect(sum(made.lines.map((line) => line.tax_amount))).toBe(made.tax);
    const after = await invoice(inv.id);
    expect(after).toMatchObject({
      status: 'PARTIALLY_PAID',
      amount_paid: '15.33000000',
      balance: '108.57000000',
    });
    const transactions = (await get(`/invoices/${inv.id}/transactions`)).json().data;
    expect(transactions).toEqual([
      expect.objectContaining({
        type: 'CREDIT_MEMO',
        amount: '15.33000000',
        note: `Credit note ${made.number}`,
      }),
    ]);
    const events = await outbox(db(), orgA.orgId, 'credit_note.created');
    expect(events.find((e) => e.data.id === made.id)?.data).toEqual(made);
    expect((await get(`/credit-notes/${made.id}`)).json().data).toEqual(made);
    await expectPayableInvoices(db(), orgA.orgId);
  });

  it('credits a whole invoice in two notes: the tax comes back exactly and the invoice is PAID', async () => {
    const inv = await invoiceFor();
    const first = await note(inv, [[0, '33.33']]);
    const second = await note(inv, [
      [0, '66.66'],
      [1, '7.77'],
    ]);
    expect(sum([first.subtotal, second.subtotal])).toBe('107.76000000');
    expect(sum([first.tax, second.tax])).toBe(inv.tax_amount);
    expect(sum([first.total, second.total])).toBe(inv.total);
    for (const name of ['GST', 'QST']) {
      const of = (n: CreditNote) => n.tax_lines.find((line) => line.name === name)!.amount;
      expect(sum([of(first), of(second)])).toBe(name === 'GST' ? '5.39000000' : '10.75000000');
    }
    const after = await invoice(inv.id);
    expect(after).toMatchObject({ status: 'PAID', balance: '0.00000000' });
    // settled by the second note: invoice.paid, once, as for any credit memo
    const paid = await outbox(db(), orgA.orgId, 'invoice.paid');
    expect(paid.filter((e) => e.data.id === inv.id)).toHaveLength(1);
    // nothing is left to credit: a cent more is over-crediting
    expect(fieldsOf(await creditRequest(inv, [[1, '0.01']]))).toEqual(['lines.0.amount']);
  });

  it('one tax component (Ontario HST) and no tax (outside Canada and the US)', async () => {
    const on = await invoiceFor({ province: 'ON', prices: ['10.00'] });
    const made = await note(on, [[0, '10.01']]);
    // 13 % of 10.01 = 1.3013 -> 1.30
    expect(made.tax_lines).toEqual([{ name: 'HST', jurisdiction: 'ON', rate: '0.13', amount: '1.30000000' }]);
    expect(made.total).toBe('11.31000000');
    const abroad = await invoiceFor({ country: 'FR', prices: ['10.00'] });
    const untaxed = await note(abroad, [[0, '5.00']]);
    expect(untaxed).toMatchObject({ tax: '0.00000000', tax_lines: [], total: '5.00000000' });
    expect(untaxed.lines[0]!.tax_amount).toBe('0.00000000');
  });

  it.each(['past_due', 'unpaid'])(
    'a note settling an overdue invoice brings its %s subscription back to active',
    async (status) => {
      const inv = await invoiceFor({ prices: ['10.00'] });
      const { rows } = await db().query<{ subscription_id: number }>(
        `UPDATE invoices SET due_date = '2026-02-02' WHERE id = $1 RETURNING subscription_id`,
        [inv.id],
      );
      await db().query(`UPDATE subscriptions SET status = $2 WHERE id = $1`, [
        rows[0]!.subscription_id,
        status,
      ]);
      await note(inv, [[0, '30.00']]); // the whole invoice: 30.00 + 1.50 + 2.99
      expect((await invoice(inv.id)).status).toBe('PAID');
      const { rows: after } = await db().query<{ status: string }>(
        'SELECT status FROM subscriptions WHERE id = $1',
        [rows[0]!.subscription_id],
      );
      expect(after[0]!.status).toBe('active');
    },
  );

  it('a PAID invoice: the whole note becomes a promotional grant named after it', async () => {
    const inv = await invoiceFor({ prices: ['10.00'] });
    await db().transaction((tx) => recordPayment(tx, { invoiceId: inv.id, amount: inv.total }));
    const before = await creditBalance(db(), customerOf(inv));
    // an alert on the customer's projected credit, evaluated now and again once the grant is made
    const alert = await post('/alerts', {
      subscription_id: inv.subscription_id,
      metric: 'credit_balance',
      threshold: '0',
    });
    expect(alert.statusCode, alert.body).toBe(201);
    const projected = parseMoney(alert.json().data.value);
    const made = await note(inv, [[0, '10.00']], 'product_unsatisfactory');
    expect((await get(`/alerts/${alert.json().data.id}`)).json().data.value).toBe(
      formatMoney(projected + parseMoney('11.5')),
    );
    // 10.00: GST 0.50, QST 0.9975 -> 1.00
    expect(made).toMatchObject({
      total: '11.50000000',
      applied_to_invoice: '0.00000000',
      credited_to_customer: '11.50000000',
    });
    expect(made.credit_grant_id).toBeTruthy();
    const grant = (await get(`/credit-grants/${made.credit_grant_id}`)).json().data;
    expect(grant).toMatchObject({
      name: `Credit note ${made.number}`,
      category: 'promotional',
      amount: '11.50000000',
      remaining: '11.50000000',
      status: 'ACTIVE',
      currency: 'CAD',
      // a grant as any other promotional one: the default priority, for all lines, never expiring
      priority: 50,
      applies_to: 'all',
      expires_at: null,
      invoice_id: null,
    });
    expect(await creditBalance(db(), customerOf(inv))).toBe(
      formatMoney(parseMoney(before) + parseMoney('11.5')),
    );
    expect((await invoice(inv.id)).status).toBe('PAID');
    const grants = await outbox(db(), orgA.orgId, 'credit_grant.created');
    expect(grants.map((e) => e.data.id)).toContain(made.credit_grant_id);
  });

  it('a partly paid invoice: a credit memo up to the balance, a grant for the rest; the balance stops at zero', async () => {
    const inv = await invoiceFor({ prices: ['10.00'] }); // 30.00 + 4.50 GST/QST (1.50 + 2.99) = 34.49
    expect(inv.total).toBe('34.49000000');
    await db().transaction((tx) => recordPayment(tx, { invoiceId: inv.id, amount: '30.00' }));
    const made = await note(inv, [[0, '20.00']]); // 20.00 + 1.00 + 2.00 (1.995) = 23.00
    expect(made).toMatchObject({
      total: '23.00000000',
      applied_to_invoice: '4.49000000',
      credited_to_customer: '18.51000000',
    });
    const after = await invoice(inv.id);
    expect(after).toMatchObject({ status: 'PAID', balance: '0.00000000', amount_paid: '34.49000000' });
    const grant = (await get(`/credit-grants/${made.credit_grant_id}`)).json().data;
    expect(grant.amount).toBe('18.51000000');
  });

  it('a PARTIALLY_REFUNDED invoice with a balance left takes the note as a credit memo', async () => {
    // docs/decisions.md, "Credit notes": up to the balance a credit memo, the rest a grant; a refund
    // never cancels what is still owed
    const inv = await invoiceFor({ prices: ['10.00'] }); // 34.49
    await db().transaction((tx) => recordPayment(tx, { invoiceId: inv.id, amount: '5.00' }));
    await db().transaction((tx) => createRefund(tx, { invoiceId: inv.id, amount: '2.00' }));
    expect(await invoice(inv.id)).toMatchObject({ status: 'PARTIALLY_REFUNDED', balance: '29.49000000' });
    const made = await note(inv, [[0, '1.00']]); // 1.00 + 0.05 + 0.10 (0.09975) = 1.15
    expect(made).toMatchObject({
      total: '1.15000000',
      applied_to_invoice: '1.15000000',
      credited_to_customer: '0.00000000',
    });
    expect((await invoice(inv.id)).balance).toBe('28.34000000');
  });

  it("what a note gives back beyond the balance is a grant in the invoice's currency", async () => {
    // 3 x 1,234 = 3,702 + GST 185 + QST 369 = 4,256 JPY, paid; a note of 1,001 gives back 1,151 JPY
    const inv = await invoiceFor({ currency: 'JPY', prices: ['1234'] });
    await db().transaction((tx) => recordPayment(tx, { invoiceId: inv.id, amount: inv.total }));
    const made = await note(inv, [[0, '1001']]);
    expect(made).toMatchObject({ currency: 'JPY', credited_to_customer: '1151.00000000' });
    const grant = (await get(`/credit-grants/${made.credit_grant_id}`)).json().data;
    expect(grant).toMatchObject({ currency: 'JPY', amount: '1151.00000000', status: 'ACTIVE' });
    // the customer's credit balance is in the organization's currency (CAD): yen are not added to it
    const customerId = customerOf(inv);
    const promo = await post(`/customers/${customerId}/credit-grants`, {
      amount: '2.00',
      category: 'promotional',
    });
    expect(promo.statusCode, promo.body).toBe(201);
    expect(await creditBalance(db(), customerId)).toBe('2.00000000');
    expect((await get(`/customers/${customerId}/credit-balance`)).json().data).toMatchObject({
      currency: 'CAD',
      available: '2.00000000',
    });
  });

  it('a Prepaid credits invoice is refused: its grant is voided instead', async () => {
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'QC' });
    const sold = await post(`/customers/${customerId}/credit-grants`, { amount: '50.00', category: 'paid' });
    expect(sold.statusCode, sold.body).toBe(201);
    const prepaid = await invoice(sold.json().data.invoice_id);
    const response = await creditRequest(prepaid, [[0, '10.00']]);
    expect(response.statusCode, response.body).toBe(409);
    expect(response.json().detail).toContain('sells prepaid credits');
    expect((await get(`/invoices/${prepaid.id}/credit-notes`)).json().data).toEqual([]);
  });

  it('a PARTIALLY_REFUNDED invoice can be credited; DRAFT, WITHDRAWN and REFUNDED ones are 409', async () => {
    const refunded = await invoiceFor({ prices: ['10.00'] });
    await db().transaction((tx) => recordPayment(tx, { invoiceId: refunded.id, amount: refunded.total }));
    await db().transaction((tx) => createRefund(tx, { invoiceId: refunded.id, amount: '5.00' }));
    expect((await invoice(refunded.id)).status).toBe('PARTIALLY_REFUNDED');
    const made = await note(refunded, [[0, '1.00']]);
    expect(made.credited_to_customer).toBe(made.total);
    await db().transaction((tx) => createRefund(tx, { invoiceId: refunded.id, amount: '29.49' }));
    expect((await invoice(refunded.id)).status).toBe('REFUNDED');
    expect((await creditRequest(refunded, [[0, '1.00']])).statusCode).toBe(409);

    const draft = await invoiceFor({ prices: ['10.00'], post: false });
    expect(draft.status).toBe('DRAFT');
    const response = await creditRequest(draft, [[0, '1.00']]);
    expect(response.statusCode, response.body).toBe(409);
    expect(response.json().error_code).toBe('CONFLICT');

    const withdrawn = await invoiceFor({ prices: ['10.00'] });
    await db().transaction((tx) => withdrawInvoice(tx, { invoiceId: withdrawn.id }));
    expect((await creditRequest(withdrawn, [[0, '1.00']])).statusCode).toBe(409);
    expect((await get(`/invoices/${withdrawn.id}/credit-notes`)).json().data).toEqual([]);
  });
});

describe('refusals', () => {
  it('422 per field: reason, empty lines, an item of another invoice, zero, below the cent, over the line', async () => {
    const inv = await invoiceFor();
    const other = await invoiceFor();
    const url = `/invoices/${inv.id}/credit-notes`;
    expect(
      fieldsOf(
        await post(url, { reason: 'mistake', lines: [{ invoice_item_id: inv.items[0]!.id, amount: '1' }] }),
      ),
    ).toEqual(['reason']);
    expect(fieldsOf(await post(url, { reason: 'other', lines: [] }))).toEqual(['lines']);
    expect(fieldsOf(await post(url, { reason: 'other' }))).toEqual(['lines']);
    expect(
      fieldsOf(
        await post(url, {
          reason: 'other',
          lines: [
            { invoice_item_id: inv.items[0]!.id, amount: '1.00' },
            { invoice_item_id: other.items[0]!.id, amount: '1.00' },
            { invoice_item_id: inv.items[1]!.id, amount: '0' },
            { invoice_item_id: inv.items[1]!.id, amount: '0.005' },
            { invoice_item_id: inv.items[1]!.id, amount: '-1' },
            { invoice_item_id: inv.items[1]!.id, amount: '7.78' },
          ],
        }),
      ),
    ).toEqual(['lines.4.amount']);
    expect(
      fieldsOf(
        await post(url, {
          reason: 'other',
          lines: [
            { invoice_item_id: inv.items[0]!.id, amount: '1.00' },
            { invoice_item_id: other.items[0]!.id, amount: '1.00' },
            { invoice_item_id: inv.items[1]!.id, amount: '0' },
            { invoice_item_id: inv.items[1]!.id, amount: '0.005' },
            { invoice_item_id: inv.items[1]!.id, amount: '7.78' },
          ],
        }),
      ),
    ).toEqual(['lines.1.invoice_item_id', 'lines.2.amount', 'lines.3.amount', 'lines.4.amount']);
    // the boundary: exactly the line is fine, once; the same item twice in one note counts both
    expect(
      fieldsOf(
        await creditRequest(inv, [
          [1, '4.00'],
          [1, '3.78'],
        ]),
      ),
    ).toEqual(['lines.1.amount']);
    await note(inv, [[1, '3.00']]);
    // the refusal says what is left of the line, earlier notes counted
    expect(messagesOf(await creditRequest(inv, [[1, '4.78']]))).toEqual([
      `Exceeds what is left to credit on item ${inv.items[1]!.id} (4.77000000 CAD of 7.77000000).`,
    ]);
    await note(inv, [[1, '4.77']]);
    expect(fieldsOf(await creditRequest(inv, [[1, '0.01']]))).toEqual(['lines.0.amount']);
    // nothing was written by the refusals
    expect((await get(`/invoices/${inv.id}/credit-notes`)).json().data).toHaveLength(2);
  });

  it('422 for more than 100 lines or a memo over 1000 characters; a 1000-character memo is kept', async () => {
    const inv = await invoiceFor();
    const url = `/invoices/${inv.id}/credit-notes`;
    const line = { invoice_item_id: inv.items[0]!.id, amount: '0.01' };
    expect(fieldsOf(await post(url, { reason: 'other', lines: Array(101).fill(line) }))).toEqual(['lines']);
    expect(fieldsOf(await post(url, { reason: 'other', lines: [line], memo: 'm'.repeat(1001) }))).toEqual([
      'memo',
    ]);
    expect((await get(`/invoices/${inv.id}/credit-notes`)).json().data).toHaveLength(0);
    const made = await post(url, { reason: 'other', lines: [line], memo: 'm'.repeat(1000) });
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json().data.memo).toBe('m'.repeat(1000));
  });

  it('never credits more than the subtotal when the invoice has a credit line (a proration credit)', async () => {
    const inv = await invoiceFor();
    // the second line made a credit of 7.77: subtotal 99.99 - 7.77 = 92.22; GST 4.611 -> 4.61,
    // QST 9.198945 -> 9.20; tax 13.81, total 106.03
    await db().query(
      `WITH line AS (UPDATE invoice_items SET line_total_pre_tax = -7.77, tax_amount = -1.04 WHERE id = $2)
       UPDATE invoices SET subtotal = 92.22, tax_amount = 13.81, total = 106.03 WHERE id = $1`,
      [inv.id, inv.items[1]!.id],
    );
    expect(fieldsOf(await creditRequest(inv, [[0, '99.99']]))).toEqual(['lines']);
    expect(messagesOf(await creditRequest(inv, [[0, '99.99']]))).toEqual([
      `Exceeds what is left to credit on invoice ${inv.invoice_number} before tax (92.22000000 CAD of its subtotal 92.22000000).`,
    ]);
    // a credit line has nothing to credit: what is left of it is nothing, not less
    expect(messagesOf(await creditRequest(inv, [[1, '1.00']]))).toEqual([
      `Exceeds what is left to credit on item ${inv.items[1]!.id} (0.00000000 CAD of -7.77000000).`,
    ]);
    const some = await note(inv, [[0, '90.00']]);
    expect(some).toMatchObject({ subtotal: '90.00000000' });
    // the first line has 9.99 left, the invoice's subtotal 2.22 only
    expect(messagesOf(await creditRequest(inv, [[0, '2.23']]))).toEqual([
      `Exceeds what is left to credit on invoice ${inv.invoice_number} before tax (2.22000000 CAD of its subtotal 92.22000000).`,
    ]);
    await note(inv, [[0, '2.22']]);
    expect(messagesOf(await creditRequest(inv, [[0, '0.01']]))).toEqual([
      `Exceeds what is left to credit on invoice ${inv.invoice_number} before tax (0.00000000 CAD of its subtotal 92.22000000).`,
    ]);
    expect(await invoice(inv.id)).toMatchObject({ status: 'PAID', balance: '0.00000000' });
  });

  it("404 for another organization's invoice and note", async () => {
    const inv = await invoiceFor();
    const made = await note(inv, [[0, '1.00']]);
    expect((await creditRequest(inv, [[0, '1.00']], 'other', orgB)).statusCode).toBe(404);
    expect((await get(`/credit-notes/${made.id}`, orgB.apiKey)).statusCode).toBe(404);
    expect((await get(`/invoices/${inv.id}/credit-notes`, orgB.apiKey)).statusCode).toBe(404);
    expect((await get('/credit-notes/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
    expect((await get('/credit-notes/not-a-uuid')).statusCode).toBe(404);
    // by customer (the MCP tool, the portal, the console): theirs is a 404, not an empty list
    const page = { limit: 25, offset: 0 };
    const byCustomer = { customerId: customerOf(inv) };
    expect((await listCreditNotes(db(), orgA.orgId, byCustomer, page)).data.map((n) => n.id)).toEqual([
      made.id,
    ]);
    const theirs = await listCreditNotes(db(), orgB.orgId, byCustomer, page).catch((error: unknown) => error);
    expect(theirs).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('races', () => {
  it('two concurrent notes over-crediting one line: one is issued, the other is a 422', async () => {
    for (let round = 0; round < 3; round++) {
      const inv = await invoiceFor({ prices: ['10.00'] }); // line 30.00
      const responses = await Promise.all([
        creditRequest(inv, [[0, '20.00']]),
        creditRequest(inv, [[0, '20.00']]),
      ]);
      expect(responses.map((r) => r.statusCode).sort()).toEqual([201, 422]);
      const refused = responses.find((r) => r.statusCode === 422)!;
      expect(fieldsOf(refused)).toEqual(['lines.0.amount']);
      const after = await invoice(inv.id);
      expect(parseMoney(after.balance) >= 0n).toBe(true);
      expect((await get(`/invoices/${inv.id}/credit-notes`)).json().data).toHaveLength(1);
    }
  });

  it('numbers are gapless per organization under 20 concurrent creators, and apart from other organizations', async () => {
    const org = await createTestOrg(db());
    const invoices: Invoice[] = [];
    for (let i = 0; i < 4; i++) invoices.push(await invoiceFor({ org, prices: ['100.00'] }));
    const other = await invoiceFor({ org: orgB, prices: ['100.00'] });
    const made = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => note(invoices[i % 4]!, [[0, '1.00']], 'duplicate', org)),
      note(other, [[0, '1.00']], 'duplicate', orgB),
    ]);
    const numbers = made
      .slice(0, 20)
      .map((n) => n.number)
      .sort();
    expect(numbers).toEqual(Array.from({ length: 20 }, (_, i) => `CN-${String(i + 1).padStart(6, '0')}`));
    // a refused note takes no number
    expect((await creditRequest(invoices[0]!, [[0, '1000.00']], 'other', org)).statusCode).toBe(422);
    expect((await note(invoices[0]!, [[0, '1.00']], 'other', org)).number).toBe('CN-000021');
  });
});

describe('numbers past CN-999999', () => {
  it('run on with seven digits, never cut to six', async () => {
    const org = await createTestOrg(db());
    const inv = await invoiceFor({ org, prices: ['100.00'] });
    await note(inv, [[0, '1.00']], 'duplicate', org);
    await db().query('UPDATE credit_note_counters SET last_number = 999998 WHERE org_id = $1', [org.orgId]);
    const numbers = [];
    for (let i = 0; i < 3; i++) numbers.push((await note(inv, [[0, '1.00']], 'duplicate', org)).number);
    expect(numbers).toEqual(['CN-999999', 'CN-1000000', 'CN-1000001']);
  });
});

describe.each([
  // 3 x 1,234 = 3,702; tax GST 185.1 -> 185, QST 369.27 -> 369; a note of 1,001: GST 50.05 -> 50,
  // QST 99.85 -> 100
  {
    currency: 'JPY',
    price: '1234',
    amount: '1001',
    bad: '1.5',
    gst: '50',
    qst: '100',
    total: '1151',
    refusal: 'Must be in whole JPY minor units (no decimals).',
  },
  // 3 x 1.234 = 3.702; a note of 1.001: GST 0.05005 -> 0.050, QST 0.09985 -> 0.100
  {
    currency: 'KWD',
    price: '1.234',
    amount: '1.001',
    bad: '0.0005',
    gst: '0.05',
    qst: '0.1',
    total: '1.151',
    refusal: 'Must be in whole KWD minor units (at most 3 decimals).',
  },
])('in $currency', ({ currency, price, amount, bad, gst, qst, total, refusal }) => {
  it('takes whole minor units only and rounds each tax component to them', async () => {
    const inv = await invoiceFor({ currency, prices: [price] });
    const refused = await creditRequest(inv, [[0, bad]]);
    expect(fieldsOf(refused)).toEqual(['lines.0.amount']);
    expect(messagesOf(refused)).toEqual([refusal]);
    const made = await note(inv, [[0, amount]]);
    expect(made.currency).toBe(currency);
    expect(made.tax_lines.map((line) => parseMoney(line.amount))).toEqual([parseMoney(gst), parseMoney(qst)]);
    expect(parseMoney(made.total)).toBe(parseMoney(total));
    expect(made.lines[0]!.tax_amount).toBe(made.tax);
    for (const value of [
      made.subtotal,
      made.tax,
      made.total,
      made.applied_to_invoice,
      made.lines[0]!.tax_amount,
    ]) {
      expect(isInMinorUnits(parseMoney(value), currency), value).toBe(true);
    }
  });

  it("shares a note's tax over its lines in whole minor units", async () => {
    // two lines of 1,001 and 1,000 (JPY: tax 300, a share of 150.07 and 149.93 -> 150 and 150)
    const inv = await invoiceFor({ currency, prices: [price, price] });
    const made = await note(inv, [
      [0, amount],
      [1, formatMoney(parseMoney(amount) - parseMoney(currency === 'JPY' ? '1' : '0.001'))],
    ]);
    expect(made.lines).toHaveLength(2);
    for (const line of made.lines) {
      expect(isInMinorUnits(parseMoney(line.tax_amount), currency), line.tax_amount).toBe(true);
    }
    expect(sum(made.lines.map((line) => line.tax_amount))).toBe(made.tax);
  });
});

describe('reads', () => {
  it("lists an invoice's notes newest first, paginated", async () => {
    const inv = await invoiceFor({ prices: ['10.00'] });
    const made: CreditNote[] = [];
    for (let i = 0; i < 3; i++) made.push(await note(inv, [[0, '1.00']]));
    const page = (await get(`/invoices/${inv.id}/credit-notes?limit=2`)).json();
    expect(page.data.map((n: CreditNote) => n.id)).toEqual([made[2]!.id, made[1]!.id]);
    expect(page.pagination).toMatchObject({ total: 3, limit: 2, offset: 0, has_more: true });
    const rest = (await get(`/invoices/${inv.id}/credit-notes?limit=2&offset=2`)).json();
    expect(rest.data.map((n: CreditNote) => n.id)).toEqual([made[0]!.id]);
    expect(rest.pagination).toMatchObject({ total: 3, has_more: false });
  });
});

function customerOf(inv: Invoice & { customer_id?: number }): number {
  return (inv as unknown as { customer_id: number }).customer_id;
}
