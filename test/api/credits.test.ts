import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockCreditCustomer } from '../../libs/billing/credits/index.js';
import {
  checkTopUps,
  createCreditGrant,
  postInvoice,
  recordPayment,
  runBilling,
  setCreditTopUp,
  type UsageForTransaction,
  withdrawInvoice,
} from '../../libs/billing/index.js';
import { CREDIT_BALANCE_SQL } from '../../libs/customers/customers.js';
import { getCustomer } from '../../libs/customers/index.js';
import { formatMoney, parseMoney } from '../../libs/money/index.js';
import type { CreditGrant, CreditGrantWithLedger } from '../../libs/schemas/index.js';
import { cancelSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { basicCatalog, customerIn, outbox, recordUsage, subscribe } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommonRouteTests } from '../helpers/route-suite.js';

/*
 * Prepaid credits through the public API (docs/decisions.md, "Credits"). Invoices here are billed
 * with `postingTime` in the grants' lifetime; customers are in Alberta (GST 5 %).
 */

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;
const usage: UsageForTransaction = (tx) => new PostgresUsageAggregator(tx);

beforeAll(async () => {
  api = await startTestApi();
  orgA = await createTestOrg(api.platform.db);
  orgB = await createTestOrg(api.platform.db);
});
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
const put = (path: string, body: unknown) =>
  api.request({
    method: 'PUT',
    path,
    key: orgA.apiKey,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });

async function grant(
  customerId: number,
  body: Record<string, unknown>,
  key = orgA.apiKey,
): Promise<CreditGrant> {
  const response = await post(`/customers/${customerId}/credit-grants`, body, key);
  expect(response.statusCode, response.body).toBe(201);
  return response.json().data;
}

async function ledgerOf(id: string): Promise<CreditGrantWithLedger> {
  const response = await get(`/credit-grants/${id}`);
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data;
}

function detailsOf(response: { statusCode: number; body: string; json(): unknown }) {
  expect(response.statusCode, response.body).toBe(422);
  const body = response.json() as { error_code: string; details: { field: string }[] };
  expect(body.error_code).toBe('VALIDATION_ERROR');
  return body.details.map((d) => d.field);
}

/** A customer with one seat subscription (10.00/month, from Jan 1 2026) and API calls. */
async function customerWithPlan(orgId = orgA.orgId) {
  const { seats, apiCalls } = await basicCatalog(db(), orgId);
  const customerId = await customerIn(db(), orgId, { state_province: 'AB' });
  const subscription = await subscribe(db(), orgId, {
    customer_id: customerId,
    items: [{ product_id: seats }, { product_id: apiCalls }],
    start_date: new Date('2026-01-01T00:00:00Z'),
  });
  return { customerId, subscription, metered: subscription.items.find((i) => i.usage_type === 'metered')! };
}

const bill = (orgId: number, now: string, postingTime = new Date()) =>
  runBilling(db(), { usage, orgId, now: new Date(now), postingTime });

async function invoiceOf(subscriptionId: number) {
  const { rows } = await db().query<{ id: string; status: string; total: string; amount_paid: string }>(
    `SELECT id, status, total::text, amount_paid::text FROM invoices WHERE subscription_id = $1
      ORDER BY period_start DESC LIMIT 1`,
    [subscriptionId],
  );
  return rows[0]!;
}

/** The invoice's CREDIT_MEMOs, in the order the burn-down used their grants (the ledger's). */
async function memos(invoiceId: string) {
  const { rows } = await db().query<{ credit_grant_id: string; amount: string }>(
    `SELECT t.credit_grant_id, t.amount::text FROM invoice_transactions t
       JOIN credit_grant_ledger l ON l.invoice_id = t.invoice_id AND l.credit_grant_id = t.credit_grant_id
      WHERE t.invoice_id = $1 AND t.type = 'CREDIT_MEMO' AND l.type = 'use' ORDER BY l.id`,
    [invoiceId],
  );
  return rows.map((row) => [row.credit_grant_id, row.amount]);
}

describe('credit grants', () => {
  it('a promotional grant is ACTIVE at once, with its grant ledger entry; the customer shows the balance', async () => {
    const { customerId } = await customerWithPlan();
    const made = await grant(customerId, { amount: '50.00', category: 'promotional', name: 'Welcome' });
    expect(made).toMatchObject({
      object: 'credit_grant',
      customer_id: customerId,
      name: 'Welcome',
      category: 'promotional',
      currency: 'CAD',
      amount: '50.00000000',
      remaining: '50.00000000',
      priority: 50,
      applies_to: 'all',
      expires_at: null,
      status: 'ACTIVE',
      invoice_id: null,
    });
    expect((await ledgerOf(made.id)).ledger).toEqual([
      expect.objectContaining({
        type: 'grant',
        amount: '50.00000000',
        remaining_after: '50.00000000',
        invoice_id: null,
      }),
    ]);
    expect((await get(`/customers/${customerId}`)).json().data.credit_balance).toBe('50.00000000');
    const created = await outbox(db(), orgA.orgId, 'credit_grant.created');
    expect(created.map((e) => e.data.id)).toContain(made.id);
  });

  it('a grant answers the instants it was given, to the millisecond, when made and when read', async () => {
    const { customerId } = await customerWithPlan();
    const made = await grant(customerId, {
      amount: '5.00',
      category: 'promotional',
      effective_at: '2026-01-02T03:04:05.678Z',
      expires_at: '2099-12-31T23:59:59.999+00:00',
    });
    const instants = { effective_at: '2026-01-02T03:04:05.678Z', expires_at: '2099-12-31T23:59:59.999Z' };
    expect(made).toMatchObject(instants);
    const read = await ledgerOf(made.id);
    expect(read).toMatchObject(instants);
    // the ledger's instants as every other instant of the API: UTC, to the millisecond
    expect(read.ledger.map((entry) => entry.created_at)).toEqual([
      expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    ]);
  });

  it('a paid grant is PENDING with a POSTED EXEMPT "Prepaid credits" invoice; paying it activates the grant', async () => {
    const { customerId } = await customerWithPlan();
    const made = await grant(customerId, { amount: '100.00', category: 'paid' });
    expect(made.status).toBe('PENDING');
    expect(made.name).toBe('Prepaid credits'); // the default name of a paid grant
    expect(made.remaining).toBe('100.00000000');
    const invoice = (await get(`/invoices/${made.invoice_id}`)).json().data;
    expect(invoice).toMatchObject({
      status: 'POSTED',
      subscription_id: null,
      total: '100.00000000',
      tax_amount: '0.00000000',
      items: [
        expect.objectContaining({ description: 'Prepaid credits', product_id: null, tax_type: 'EXEMPT' }),
      ],
    });
    // due after the organization's payment terms, as any invoice it posts
    const { rows: terms } = await db().query<{ due: string }>(
      `SELECT to_char($2::date + o.payment_terms_days, 'YYYY-MM-DD') AS due FROM organizations o WHERE o.id = $1`,
      [orgA.orgId, invoice.invoice_date],
    );
    expect(invoice.due_date).not.toBe(invoice.invoice_date);
    expect(invoice.due_date).toBe(terms[0]!.due);
    // a sale of one day, announced as any posted invoice is
    expect([invoice.period_start, invoice.period_end]).toEqual([invoice.invoice_date, invoice.invoice_date]);
    const posted = await outbox(db(), orgA.orgId, 'invoice.posted');
    expect(posted.filter((event) => event.data.id === made.invoice_id)).toHaveLength(1);
    // pending credits are not spendable
    expect((await get(`/customers/${customerId}`)).json().data.credit_balance).toBe('0.00000000');
    await db().transaction((tx) =>
      recordPayment(tx, { invoiceId: made.invoice_id!, amount: '60', method: 'CARD' }),
    );
    expect((await ledgerOf(made.id)).status).toBe('PENDING');
    await db().transaction((tx) =>
      recordPayment(tx, { invoiceId: made.invoice_id!, amount: '40', method: 'CARD' }),
    );
    expect((await ledgerOf(made.id)).status).toBe('ACTIVE');
    expect((await get(`/customers/${customerId}`)).json().data.credit_balance).toBe('100.00000000');
  });

  it('a reference makes the call idempotent: same amount 200 with the same grant, another amount 409', async () => {
    const { customerId } = await customerWithPlan();
    const body = { amount: '20', category: 'promotional', reference: 'promo-42' };
    const [first, second] = await Promise.all([
      post(`/customers/${customerId}/credit-grants`, body),
      post(`/customers/${customerId}/credit-grants`, { ...body, amount: '20.00' }),
    ]);
    expect([first!.statusCode, second!.statusCode].sort()).toEqual([200, 201]);
    expect(first!.json().data.id).toBe(second!.json().data.id);
    const conflict = await post(`/customers/${customerId}/credit-grants`, { ...body, amount: '21' });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error_code).toBe('CONFLICT');
    const list = (await get(`/customers/${customerId}/credit-grants`)).json();
    expect(list.data).toHaveLength(1);
  });

  it('a reference is per customer: the same one on another customer makes that customer its own grant', async () => {
    const first = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const second = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const body = { amount: '20', category: 'promotional', reference: 'per-customer' };
    const mine = await post(`/customers/${first}/credit-grants`, body);
    const theirs = await post(`/customers/${second}/credit-grants`, body);
    expect([mine.statusCode, theirs.statusCode]).toEqual([201, 201]);
    expect(mine.json().data.name).toBe('Promotional credits'); // the default name
    expect(theirs.json().data.customer_id).toBe(second);
    expect(theirs.json().data.id).not.toBe(mine.json().data.id);
    expect((await get(`/customers/${second}`)).json().data.credit_balance).toBe('20.00000000');
  });

  it("lists a customer's grants newest first, filtered by status", async () => {
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const promo = await grant(customerId, { amount: '5', category: 'promotional' });
    const paid = await grant(customerId, { amount: '7', category: 'paid' });
    const list = async (query: string) => {
      const response = await get(`/customers/${customerId}/credit-grants${query}`);
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      return [body.data.map((g: CreditGrant) => g.id), body.pagination.total];
    };
    expect(await list('')).toEqual([[paid.id, promo.id], 2]);
    expect(await list('?status=PENDING')).toEqual([[paid.id], 1]);
    expect(await list('?status=ACTIVE')).toEqual([[promo.id], 1]);
    expect(await list('?status=VOIDED')).toEqual([[], 0]);
  });

  it('refuses bad input field by field', async () => {
    const { customerId } = await customerWithPlan();
    const path = `/customers/${customerId}/credit-grants`;
    expect(detailsOf(await post(path, { amount: '0', category: 'paid' }))).toEqual(['amount']);
    expect(detailsOf(await post(path, { amount: '-5', category: 'paid' }))).toEqual(['amount']);
    expect(detailsOf(await post(path, { amount: '10.005', category: 'paid' }))).toEqual(['amount']);
    expect(detailsOf(await post(path, { amount: '10', category: 'gift' }))).toEqual(['category']);
    expect(detailsOf(await post(path, { amount: '10', category: 'paid', applies_to: 'seats' }))).toEqual([
      'applies_to',
    ]);
    expect(detailsOf(await post(path, { amount: '10', category: 'paid', priority: 101 }))).toEqual([
      'priority',
    ]);
    expect(detailsOf(await post(path, { amount: '10', category: 'paid', priority: -1 }))).toEqual([
      'priority',
    ]);
    const at = '2026-06-01T00:00:00Z';
    expect(
      detailsOf(
        await post(path, { amount: '10', category: 'promotional', effective_at: at, expires_at: at }),
      ),
    ).toEqual(['expires_at']);
    expect(
      detailsOf(await post(path, { amount: '10', category: 'promotional', expires_at: 'tomorrow' })),
    ).toEqual(['expires_at']);
    expect(detailsOf(await post(path, { amount: '10', category: 'promotional', color: 'red' }))).toEqual([
      'color',
    ]);
    const topUp = `/customers/${customerId}/credit-top-up`;
    const put = (body: unknown) =>
      api.request({
        method: 'PUT',
        path: topUp,
        key: orgA.apiKey,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
    expect(detailsOf(await put({ enabled: true, threshold: '50', target: '50' }))).toEqual(['threshold']);
    expect(detailsOf(await put({ enabled: true, threshold: '80', target: '50' }))).toEqual(['threshold']);
    expect(detailsOf(await put({ enabled: true, threshold: '-1', target: '50' }))).toEqual(['threshold']);
    expect(detailsOf(await put({ enabled: true, threshold: '10', target: '50.001' }))).toEqual(['target']);
  });

  it('bounds name and reference at 1 to 255 characters and priority at 0 to 100, both ends accepted', async () => {
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const path = `/customers/${customerId}/credit-grants`;
    const codesOf = (response: { statusCode: number; body: string; json(): unknown }) => {
      detailsOf(response);
      return (response.json() as { details: { field: string; code: string }[] }).details.map((d) => [
        d.field,
        d.code,
      ]);
    };
    const base = { amount: '1', category: 'promotional' };
    for (const field of ['name', 'reference']) {
      expect(codesOf(await post(path, { ...base, [field]: '' })), field).toEqual([[field, 'blank']]);
      expect(codesOf(await post(path, { ...base, [field]: 'x'.repeat(256) })), field).toEqual([
        [field, 'too_long'],
      ]);
    }
    const longest = await grant(customerId, { ...base, name: 'n'.repeat(255), reference: 'r'.repeat(255) });
    expect(longest.name).toBe('n'.repeat(255));
    expect((await grant(customerId, { ...base, priority: 0 })).priority).toBe(0);
    expect((await grant(customerId, { ...base, priority: 100 })).priority).toBe(100);
    // an amount has at most 12 integer and 8 fractional digits; spaces around it are dropped
    for (const amount of ['1000000000000', '1.000000000']) {
      expect(codesOf(await post(path, { ...base, amount })), amount).toEqual([['amount', 'invalid_format']]);
    }
    expect((await grant(customerId, { ...base, amount: ' 999999999999.00000000 ' })).amount).toBe(
      '999999999999.00000000',
    );
    // instants need a zone, Z or an offset, and a year from 0001 on
    for (const [effective_at, code] of [
      ['2026-06-01T00:00:00', 'invalid_format'],
      ['0000-06-01T00:00:00Z', 'out_of_range'],
    ]) {
      expect(codesOf(await post(path, { ...base, effective_at })), effective_at).toEqual([
        ['effective_at', code],
      ]);
    }
    const offset = await grant(customerId, { ...base, effective_at: '2026-06-01T02:00:00+02:00' });
    expect(offset.effective_at).toBe('2026-06-01T00:00:00.000Z');
  });

  it.each([
    // JPY has no minor digit, KWD three: what is payable in CAD is not the measure
    { currency: 'JPY', good: '1000', bad: '10.5' },
    { currency: 'KWD', good: '1.234', bad: '1.2345' },
  ])(
    "takes amounts in the whole minor units of the organization's $currency",
    async ({ currency, good, bad }) => {
      const org = await createTestOrg(db());
      await db().query('UPDATE organizations SET default_currency = $2 WHERE id = $1', [org.orgId, currency]);
      const customerId = await customerIn(db(), org.orgId, { state_province: 'AB' });
      const path = `/customers/${customerId}/credit-grants`;
      expect(detailsOf(await post(path, { amount: bad, category: 'promotional' }, org.apiKey))).toEqual([
        'amount',
      ]);
      const promo = await grant(customerId, { amount: good, category: 'promotional' }, org.apiKey);
      expect(promo).toMatchObject({ currency, amount: formatMoney(parseMoney(good)), status: 'ACTIVE' });
      // a paid grant sells its credits on an invoice in that currency
      const paid = await grant(customerId, { amount: good, category: 'paid' }, org.apiKey);
      const sold = (await get(`/invoices/${paid.invoice_id}`, org.apiKey)).json().data;
      expect(sold).toMatchObject({ currency, total: formatMoney(parseMoney(good)) });
      const topUp = (body: unknown) =>
        api.request({
          method: 'PUT',
          path: `/customers/${customerId}/credit-top-up`,
          key: org.apiKey,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
      expect(detailsOf(await topUp({ enabled: false, threshold: bad, target: '5000' }))).toEqual([
        'threshold',
      ]);
      expect(detailsOf(await topUp({ enabled: false, threshold: '0', target: bad }))).toEqual(['target']);
      const set = await topUp({ enabled: false, threshold: good, target: '5000' });
      expect(set.statusCode, set.body).toBe(200);
      expect(set.json().data).toMatchObject({ threshold: formatMoney(parseMoney(good)) });
    },
  );

  it("another organization's customer or grant is a 404 on every route", async () => {
    const { customerId } = await customerWithPlan();
    const theirs = await grant(customerId, { amount: '5', category: 'promotional' });
    const key = orgB.apiKey;
    for (const response of [
      await post(`/customers/${customerId}/credit-grants`, { amount: '5', category: 'promotional' }, key),
      await get(`/customers/${customerId}/credit-grants`, key),
      await get(`/customers/${customerId}/credit-balance`, key),
      await get(`/customers/${customerId}/credit-top-up`, key),
      await get(`/credit-grants/${theirs.id}`, key),
      await post(`/credit-grants/${theirs.id}/void`, {}, key),
      await get(`/credit-grants/not-a-uuid`),
      await get(`/customers/abc/credit-balance`),
    ]) {
      expect(response.statusCode, response.body).toBe(404);
      expect(response.json().error_code).toBe('NOT_FOUND');
    }
    expect((await ledgerOf(theirs.id)).status).toBe('ACTIVE');
  });

  describe('route checks', () => {
    let customerId: number;
    let grantId: string;
    beforeAll(async () => {
      ({ customerId } = await customerWithPlan());
      grantId = (await grant(customerId, { amount: '5', category: 'promotional' })).id;
    });
    runCommonRouteTests(
      () => ({
        api,
        key: orgA.apiKey,
        request: { method: 'GET', path: `/credit-grants/${grantId}` },
        crossOrg: {
          path: (id) => `/credit-grants/${id}`,
          foreignId: grantId,
          missingId: '00000000-0000-4000-8000-000000000000',
        },
      }),
      { namesRecord: false },
    );
    runCommonRouteTests(() => ({
      api,
      key: orgA.apiKey,
      request: { method: 'GET', path: `/customers/${customerId}/credit-balance` },
    }));
  });
});

describe('burn-down on posting', () => {
  it('pays in order (priority, soonest expiry, oldest): each use a CREDIT_MEMO naming its grant', async () => {
    const { customerId, subscription } = await customerWithPlan();
    const late = await grant(customerId, { amount: '3.00', category: 'promotional', priority: 60 });
    const soon = await grant(customerId, {
      amount: '4.00',
      category: 'promotional',
      priority: 10,
      expires_at: '2099-01-01T00:00:00Z',
    });
    const never = await grant(customerId, { amount: '2.00', category: 'promotional', priority: 10 });
    await bill(orgA.orgId, '2026-02-01T00:00:00Z');
    // 10.00 + GST 0.50 = 10.50: soon 4.00, never 2.00, late 3.00 -> 9.00 paid, 1.50 left
    const invoice = await invoiceOf(subscription.id);
    expect(invoice).toMatchObject({
      status: 'PARTIALLY_PAID',
      total: '10.50000000',
      amount_paid: '9.00000000',
    });
    expect(await memos(invoice.id)).toEqual([
      [soon.id, '4.00000000'],
      [never.id, '2.00000000'],
      [late.id, '3.00000000'],
    ]);
    for (const id of [soon.id, never.id, late.id]) {
      const depleted = await ledgerOf(id);
      expect(depleted).toMatchObject({ status: 'DEPLETED', remaining: '0.00000000' });
      expect(depleted.ledger.map((entry) => [entry.type, entry.invoice_id, entry.remaining_after])).toEqual([
        ['grant', null, depleted.amount],
        ['use', invoice.id, '0.00000000'],
      ]);
    }
    expect((await outbox(db(), orgA.orgId, 'credit_grant.depleted')).map((e) => e.data.id)).toEqual(
      expect.arrayContaining([soon.id, never.id, late.id]),
    );
  });

  it('a usage grant pays only the metered lines and their tax', async () => {
    const { customerId, subscription, metered } = await customerWithPlan();
    await recordUsage(db(), orgA.orgId, metered.id, '20', '2026-01-10T00:00:00Z'); // 20.00 + GST 1.00
    const usageOnly = await grant(customerId, {
      amount: '500',
      category: 'promotional',
      applies_to: 'usage',
    });
    await bill(orgA.orgId, '2026-02-01T00:00:00Z');
    const invoice = await invoiceOf(subscription.id);
    // seats 10.00 + usage 20.00 = 30.00, GST 1.50: total 31.50; the usage grant pays 21.00
    expect(invoice).toMatchObject({
      total: '31.50000000',
      amount_paid: '21.00000000',
      status: 'PARTIALLY_PAID',
    });
    expect(await memos(invoice.id)).toEqual([[usageOnly.id, '21.00000000']]);
    expect((await ledgerOf(usageOnly.id)).remaining).toBe('479.00000000');
  });

  it('a usage grant caps the same on a draft posted later and in the upcoming invoice', async () => {
    // docs/decisions.md, "Credits": `usage` grants pay at most the metered lines plus their tax, on
    // every posting (`invoice post` too), and the upcoming invoice shows what posting would use
    const { customerId, subscription, metered } = await customerWithPlan();
    await recordUsage(db(), orgA.orgId, metered.id, '20', '2026-01-10T00:00:00Z'); // 20.00 + GST 1.00
    await grant(customerId, { amount: '500', category: 'promotional', applies_to: 'usage' });
    const run = await runBilling(db(), {
      usage,
      orgId: orgA.orgId,
      subscriptionIds: [subscription.id],
      post: false,
      now: new Date('2026-02-01T00:00:00Z'),
    });
    expect(run.invoice_ids).toHaveLength(1);
    await db().transaction((tx) => postInvoice(tx, { invoiceId: run.invoice_ids[0]! }));
    // seats 10.00 + usage 20.00, GST 1.50: 31.50, of which the usage grant pays 21.00
    expect(await invoiceOf(subscription.id)).toMatchObject({
      total: '31.50000000',
      amount_paid: '21.00000000',
      status: 'PARTIALLY_PAID',
    });
    // the running period: seats 10.00 + 30 calls 30.00, GST 2.00: 42.00; the grant would pay 31.50
    await bill(orgA.orgId, new Date().toISOString());
    await recordUsage(db(), orgA.orgId, metered.id, '30', new Date().toISOString());
    const upcoming = (await get(`/subscriptions/${subscription.id}/upcoming-invoice`)).json().data;
    expect(upcoming).toMatchObject({
      total: '42.00000000',
      credits_applied: '31.50000000',
      amount_due: '10.50000000',
    });
  });

  it('a grant is never used from its expiry instant on; the posting expires it first', async () => {
    const { customerId, subscription } = await customerWithPlan();
    const expiring = await grant(customerId, {
      amount: '5.00',
      category: 'promotional',
      effective_at: '2026-01-01T00:00:00Z',
      expires_at: '2026-03-01T00:00:00Z',
    });
    await bill(orgA.orgId, '2026-02-01T00:00:00Z', new Date('2026-03-01T00:00:00Z'));
    const invoice = await invoiceOf(subscription.id);
    expect(invoice).toMatchObject({ status: 'POSTED', amount_paid: '0.00000000' });
    expect(await ledgerOf(expiring.id)).toMatchObject({
      status: 'EXPIRED',
      remaining: '0.00000000',
      ledger: [
        expect.objectContaining({ type: 'grant' }),
        expect.objectContaining({ type: 'expiry', amount: '5.00000000', remaining_after: '0.00000000' }),
      ],
    });
    expect((await outbox(db(), orgA.orgId, 'credit_grant.expired')).map((e) => e.data.id)).toContain(
      expiring.id,
    );
  });

  it("posting a draft by hand at a grant's expiry instant lapses the grant first, with its event", async () => {
    const { customerId, subscription } = await customerWithPlan();
    const run = await runBilling(db(), {
      usage,
      orgId: orgA.orgId,
      subscriptionIds: [subscription.id],
      post: false,
      now: new Date('2026-02-01T00:00:00Z'),
    });
    const expiring = await grant(customerId, {
      amount: '5.00',
      category: 'promotional',
      expires_at: '2099-01-01T00:00:00Z',
    });
    // another customer's grant due at the same instant is not this posting's to lapse
    const neighbour = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const theirs = await grant(neighbour, {
      amount: '5.00',
      category: 'promotional',
      expires_at: '2099-01-01T00:00:00Z',
    });
    await db().transaction((tx) =>
      postInvoice(tx, { invoiceId: run.invoice_ids[0]!, at: new Date('2099-01-01T00:00:00Z') }),
    );
    expect((await ledgerOf(theirs.id)).status).toBe('ACTIVE');
    expect(await invoiceOf(subscription.id)).toMatchObject({ status: 'POSTED', amount_paid: '0.00000000' });
    expect(await ledgerOf(expiring.id)).toMatchObject({
      status: 'EXPIRED',
      ledger: [
        expect.objectContaining({ type: 'grant' }),
        expect.objectContaining({ type: 'expiry', amount: '5.00000000', remaining_after: '0.00000000' }),
      ],
    });
    expect((await outbox(db(), orgA.orgId, 'credit_grant.expired')).map((e) => e.data.id)).toContain(
      expiring.id,
    );
  });

  it('one millisecond before its expiry a grant still pays', async () => {
    const { customerId, subscription } = await customerWithPlan();
    await grant(customerId, {
      amount: '5.00',
      category: 'promotional',
      effective_at: '2026-01-01T00:00:00Z',
      expires_at: '2026-03-01T00:00:00Z',
    });
    await bill(orgA.orgId, '2026-02-01T00:00:00Z', new Date('2026-02-28T23:59:59.999Z'));
    expect((await invoiceOf(subscription.id)).amount_paid).toBe('5.00000000');
  });

  it('a grant pays from its effective instant: at the posting instant yes, one millisecond after no', async () => {
    for (const [effective, paid] of [
      ['2026-02-15T00:00:00.000Z', '5.00000000'],
      ['2026-02-15T00:00:00.001Z', '0.00000000'],
    ] as const) {
      const { customerId, subscription } = await customerWithPlan();
      await grant(customerId, { amount: '5.00', category: 'promotional', effective_at: effective });
      await bill(orgA.orgId, '2026-02-01T00:00:00Z', new Date('2026-02-15T00:00:00.000Z'));
      expect((await invoiceOf(subscription.id)).amount_paid, effective).toBe(paid);
    }
  });

  it('a grant not yet effective is not used', async () => {
    const { customerId, subscription } = await customerWithPlan();
    await grant(customerId, {
      amount: '5.00',
      category: 'promotional',
      effective_at: '2099-01-01T00:00:00Z',
    });
    await bill(orgA.orgId, '2026-02-01T00:00:00Z');
    expect((await invoiceOf(subscription.id)).amount_paid).toBe('0.00000000');
  });

  it('a prepaid-credits invoice is never paid by credits', async () => {
    const { customerId } = await customerWithPlan();
    await grant(customerId, { amount: '500', category: 'promotional' });
    const paid = await grant(customerId, { amount: '100', category: 'paid' });
    expect((await get(`/invoices/${paid.invoice_id}`)).json().data).toMatchObject({
      status: 'POSTED',
      amount_paid: '0.00000000',
    });
  });
});

describe('void', () => {
  it('voids what is left, keeps what was used; again answers the same; a PENDING grant withdraws its invoice', async () => {
    const { customerId, subscription } = await customerWithPlan();
    const partly = await grant(customerId, { amount: '25.00', category: 'promotional' });
    await bill(orgA.orgId, '2026-02-01T00:00:00Z');
    const voided = await post(`/credit-grants/${partly.id}/void`, {});
    expect(voided.statusCode, voided.body).toBe(200);
    expect(voided.json().data).toMatchObject({ status: 'VOIDED', remaining: '0.00000000' });
    const again = await post(`/credit-grants/${partly.id}/void`, {});
    expect(again.json().data).toEqual(voided.json().data);
    const invoice = await invoiceOf(subscription.id);
    expect((await ledgerOf(partly.id)).ledger.map((e) => [e.type, e.amount, e.remaining_after])).toEqual([
      ['grant', '25.00000000', '25.00000000'],
      ['use', '10.50000000', '14.50000000'],
      ['void', '14.50000000', '0.00000000'],
    ]);
    expect(invoice.amount_paid).toBe('10.50000000');

    const pending = await grant(customerId, { amount: '40', category: 'paid' });
    const voidPending = await post(`/credit-grants/${pending.id}/void`, {});
    expect(voidPending.json().data).toMatchObject({ status: 'VOIDED', remaining: '0.00000000' });
    expect((await get(`/invoices/${pending.invoice_id}`)).json().data.status).toBe('WITHDRAWN');
  });

  it('voiding a paid grant once its invoice is paid voids what is left; the invoice stays PAID', async () => {
    const { customerId } = await customerWithPlan();
    const paid = await grant(customerId, { amount: '30', category: 'paid' });
    await db().transaction((tx) =>
      recordPayment(tx, { invoiceId: paid.invoice_id!, amount: '30', method: 'CARD' }),
    );
    expect((await ledgerOf(paid.id)).status).toBe('ACTIVE');
    const voided = await post(`/credit-grants/${paid.id}/void`, {});
    expect(voided.statusCode, voided.body).toBe(200);
    expect(voided.json().data).toMatchObject({ status: 'VOIDED', remaining: '0.00000000' });
    expect((await get(`/invoices/${paid.invoice_id}`)).json().data.status).toBe('PAID');
  });

  it('a void of a DEPLETED or EXPIRED grant is 200 and changes nothing', async () => {
    const { customerId } = await customerWithPlan();
    const depleted = await grant(customerId, { amount: '1.00', category: 'promotional' });
    await bill(orgA.orgId, '2026-02-01T00:00:00Z');
    const before = await ledgerOf(depleted.id);
    expect(before.status).toBe('DEPLETED');
    const response = await post(`/credit-grants/${depleted.id}/void`, {});
    expect(response.statusCode).toBe(200);
    expect(await ledgerOf(depleted.id)).toEqual(before);
  });

  it('withdrawing a Prepaid credits invoice voids its grant', async () => {
    const { customerId } = await customerWithPlan();
    const paid = await grant(customerId, { amount: '30', category: 'paid' });
    await db().transaction((tx) => withdrawInvoice(tx, { invoiceId: paid.invoice_id! }));
    expect(await ledgerOf(paid.id)).toMatchObject({ status: 'VOIDED', remaining: '0.00000000' });
  });
});

describe('balance and top-up', () => {
  it('available, pending from the upcoming invoices, projected, next expiry; the upcoming invoice shows credits', async () => {
    const { customerId, subscription, metered } = await customerWithPlan();
    // bill the first months so the running period is now's
    await bill(orgA.orgId, new Date().toISOString());
    await recordUsage(db(), orgA.orgId, metered.id, '30', new Date().toISOString());
    await grant(customerId, { amount: '15.00', category: 'promotional', expires_at: '2099-01-01T00:00:00Z' });
    await grant(customerId, { amount: '5.00', category: 'promotional', expires_at: '2099-01-01T00:00:00Z' });
    await grant(customerId, { amount: '7.00', category: 'promotional' });
    const upcoming = (await get(`/subscriptions/${subscription.id}/upcoming-invoice`)).json().data;
    // seats 10.00 + 30 calls 30.00 = 40.00, GST 2.00: 42.00, all credits (27.00) would pay
    expect(upcoming).toMatchObject({
      total: '42.00000000',
      credits_applied: '27.00000000',
      amount_due: '15.00000000',
    });
    const balance = (await get(`/customers/${customerId}/credit-balance`)).json().data;
    expect(balance).toMatchObject({
      object: 'credit_balance',
      customer_id: customerId,
      currency: 'CAD',
      available: '27.00000000',
      pending: '42.00000000',
      projected: '-15.00000000',
      next_expiry: { amount: '20.00000000', expires_at: '2099-01-01T00:00:00.000Z' },
    });
    expect(Date.parse(balance.as_of)).toBeLessThanOrEqual(Date.now());
  });

  it('a subscription with no upcoming invoice adds nothing pending: a trial canceled at its end', async () => {
    const { seats } = await basicCatalog(db(), orgA.orgId);
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const now = new Date();
    const trial = await subscribe(
      db(),
      orgA.orgId,
      { customer_id: customerId, items: [{ product_id: seats }], start_date: now, trial_days: 14 },
      now,
    );
    await db().transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: trial.id, orgId: orgA.orgId, atPeriodEnd: true }),
    );
    expect((await get(`/subscriptions/${trial.id}/upcoming-invoice`)).statusCode).toBe(404);
    await grant(customerId, { amount: '6.00', category: 'promotional' });
    const balance = await get(`/customers/${customerId}/credit-balance`);
    expect(balance.statusCode, balance.body).toBe(200);
    expect(balance.json().data).toMatchObject({
      available: '6.00000000',
      pending: '0.00000000',
      projected: '6.00000000',
    });
  });

  it('available counts the effective grants only; next_expiry is the soonest expiry', async () => {
    // docs/decisions.md, "Credits": the balance is the remainders of ACTIVE grants that are effective
    // and not expired, at the same instant posting would judge them
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    await grant(customerId, { amount: '4.00', category: 'promotional', expires_at: '2099-01-01T00:00:00Z' });
    await grant(customerId, { amount: '10.00', category: 'promotional', expires_at: '2098-01-01T00:00:00Z' });
    await grant(customerId, { amount: '1.50', category: 'promotional', expires_at: '2098-01-01T00:00:00Z' });
    // half a second later is a later expiry: part of the balance, not of the next expiry
    await grant(customerId, {
      amount: '2.00',
      category: 'promotional',
      expires_at: '2098-01-01T00:00:00.500Z',
    });
    // not effective yet: no part of the balance, nor of its next expiry
    await grant(customerId, {
      amount: '3.00',
      category: 'promotional',
      effective_at: '2097-01-01T00:00:00Z',
      expires_at: '2097-06-01T00:00:00Z',
    });
    const balance = (await get(`/customers/${customerId}/credit-balance`)).json().data;
    expect(balance).toMatchObject({
      available: '17.50000000',
      pending: '0.00000000',
      projected: '17.50000000',
      next_expiry: { amount: '11.50000000', expires_at: '2098-01-01T00:00:00.000Z' },
    });
  });

  it("a customer's credit_balance counts a grant from its effective instant, not from its expiry instant", async () => {
    // libs/customers: "now" is the statement's instant. The statements of one simple-protocol
    // message share statement_timestamp(), so the grant is moved to that very instant, then read.
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const made = await grant(customerId, { amount: '7.00', category: 'promotional' });
    const balanceWith = async (effective: string, expires: string) => {
      const results = (await db().query(
        `UPDATE credit_grants SET effective_at = statement_timestamp() + interval '${effective}',
                expires_at = statement_timestamp() + interval '${expires}' WHERE id = '${made.id}';
         SELECT ${CREDIT_BALANCE_SQL}::text AS balance FROM customers c WHERE c.id = ${customerId}`,
      )) as unknown as { rows: { balance: string }[] }[];
      return results[1]!.rows[0]!.balance;
    };
    expect(await balanceWith('0', '1 day')).toBe('7.00000000');
    expect(await balanceWith('1 microsecond', '1 day')).toBe('0.00000000');
    expect(await balanceWith('-1 day', '0')).toBe('0.00000000');
    expect(await balanceWith('-1 day', '1 microsecond')).toBe('7.00000000');
  });

  it("a grant given no effective_at is effective from its transaction's now(), not the caller's clock", async () => {
    // what the transaction reads after it (a posting, a balance) counts the grant, whatever instant
    // the caller judged by (a top-up passes the instant of the balance it read)
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    await db().transaction(async (tx) => {
      const { grant: made } = await createCreditGrant(tx, {
        orgId: orgA.orgId,
        customerId,
        input: { amount: '2.00', category: 'promotional' },
        now: new Date('2030-01-01T00:00:00Z'),
      });
      const { rows } = await tx.query<{ now: Date }>('SELECT now()');
      expect(made.effective_at).toBe(rows[0]!.now.toISOString());
    });
  });

  it('credit_balance counts a grant made effective after the reading transaction began', async () => {
    // a grant committed while a transaction runs is effective to its next read (statement_timestamp,
    // not the transaction's now())
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    await db().transaction(async (tx) => {
      expect((await getCustomer(tx, orgA.orgId, customerId)).credit_balance).toBe('0.00000000');
      await grant(customerId, { amount: '3.00', category: 'promotional' });
      expect((await getCustomer(tx, orgA.orgId, customerId)).credit_balance).toBe('3.00000000');
    });
  });

  it("pending counts the upcoming invoices in the credits' currency only", async () => {
    // docs/decisions.md, "Credits": credit is in the organization's default currency (CAD here)
    const { seats } = await basicCatalog(db(), orgA.orgId, 'USD');
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const subscription = await subscribe(db(), orgA.orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: new Date('2026-01-01T00:00:00Z'),
    });
    await bill(orgA.orgId, new Date().toISOString());
    const upcoming = (await get(`/subscriptions/${subscription.id}/upcoming-invoice`)).json().data;
    expect(upcoming).toMatchObject({ currency: 'USD', total: '10.50000000' });
    expect((await get(`/customers/${customerId}/credit-balance`)).json().data).toMatchObject({
      currency: 'CAD',
      pending: '0.00000000',
      projected: '0.00000000',
    });
  });

  it('a top-up is off until set; a threshold of 0 is allowed, in whole minor units only', async () => {
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const path = `/customers/${customerId}/credit-top-up`;
    expect((await get(path)).json().data).toEqual({
      object: 'credit_top_up',
      customer_id: customerId,
      enabled: false,
      threshold: '0.00000000',
      target: '0.00000000',
      updated_at: null,
    });
    expect(detailsOf(await put(path, { enabled: true, threshold: '10.001', target: '50' }))).toEqual([
      'threshold',
    ]);
    const zero = await put(path, { enabled: true, threshold: '0', target: '50' });
    expect(zero.statusCode, zero.body).toBe(200);
    expect(zero.json().data).toMatchObject({ enabled: true, threshold: '0.00000000', target: '50.00000000' });
  });

  it('a disabled top-up makes no grant; a PENDING grant bought by hand does not hold one back', async () => {
    // no subscription: projected 0.00, below a threshold of 10.00
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const path = `/customers/${customerId}/credit-top-up`;
    const grants = async () =>
      ((await get(`/customers/${customerId}/credit-grants`)).json().data as CreditGrant[]).map((g) => [
        g.name,
        g.status,
        g.amount,
      ]);
    expect((await put(path, { enabled: false, threshold: '10', target: '100' })).statusCode).toBe(200);
    await checkTopUps(db(), api.usage.readStores, [{ orgId: orgA.orgId, customerId }]);
    expect(await grants()).toEqual([]);
    await grant(customerId, { amount: '5', category: 'paid', name: 'Bought' });
    // enabling checks at once
    expect((await put(path, { enabled: true, threshold: '10', target: '100' })).statusCode).toBe(200);
    expect(await grants()).toEqual([
      ['Automatic top-up', 'PENDING', '100.00000000'],
      ['Bought', 'PENDING', '5.00000000'],
    ]);
  });

  it('a top-up paid, then voided, is no longer waiting: the void tops up again', async () => {
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const topUps = async () =>
      ((await get(`/customers/${customerId}/credit-grants`)).json().data as CreditGrant[]).map((g) => [
        g.status,
        g.amount,
      ]);
    // no subscription: projected 0.00, below 10.00
    expect(
      (await put(`/customers/${customerId}/credit-top-up`, { enabled: true, threshold: '10', target: '100' }))
        .statusCode,
    ).toBe(200);
    const [first] = (await get(`/customers/${customerId}/credit-grants`)).json().data as CreditGrant[];
    await db().transaction((tx) =>
      recordPayment(tx, { invoiceId: first!.invoice_id!, amount: '100', method: 'CARD' }),
    );
    expect(await topUps()).toEqual([['ACTIVE', '100.00000000']]);
    expect((await post(`/credit-grants/${first!.id}/void`, {})).statusCode).toBe(200);
    expect(await topUps()).toEqual([
      ['PENDING', '100.00000000'],
      ['VOIDED', '100.00000000'],
    ]);
  });

  it('falls below the threshold: exactly one paid grant of target - projected, even with checks racing', async () => {
    const { customerId, metered } = await customerWithPlan();
    await bill(orgA.orgId, new Date().toISOString());
    await recordUsage(db(), orgA.orgId, metered.id, '60', new Date().toISOString());
    // upcoming: 10.00 + 60.00 = 70.00 + GST 3.50 = 73.50; available 0: projected -73.50
    const put = await api.request({
      method: 'PUT',
      path: `/customers/${customerId}/credit-top-up`,
      key: orgA.apiKey,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ enabled: true, threshold: '10.00', target: '100.00' }),
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().data).toMatchObject({
      enabled: true,
      threshold: '10.00000000',
      target: '100.00000000',
    });
    await Promise.all(
      Array.from({ length: 5 }, () =>
        checkTopUps(db(), api.usage.readStores, [{ orgId: orgA.orgId, customerId }]),
      ),
    );
    const grants = (await get(`/customers/${customerId}/credit-grants`)).json().data as CreditGrant[];
    expect(grants.map((g) => [g.category, g.status, g.amount, g.name])).toEqual([
      ['paid', 'PENDING', '173.50000000', 'Automatic top-up'],
    ]);
    expect((await get(`/customers/${customerId}/credit-top-up`)).json().data.enabled).toBe(true);
  });

  it('a new target replaces the old one: the next top-up brings projected to it', async () => {
    // no subscription: projected 0.00
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const path = `/customers/${customerId}/credit-top-up`;
    expect((await put(path, { enabled: false, threshold: '10', target: '100' })).statusCode).toBe(200);
    const changed = await put(path, { enabled: true, threshold: '20', target: '250' });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data).toMatchObject({ threshold: '20.00000000', target: '250.00000000' });
    expect((await get(path)).json().data).toMatchObject({
      enabled: true,
      threshold: '20.00000000',
      target: '250.00000000',
    });
    const grants = (await get(`/customers/${customerId}/credit-grants`)).json().data as CreditGrant[];
    expect(grants.map((g) => [g.name, g.amount])).toEqual([['Automatic top-up', '250.00000000']]);
  });

  it('a check that loses the race for the one PENDING top-up makes none and does not fail', async () => {
    // both checks read projected 0.00 below 10.00, then wait for the customer held here: the second
    // to get it meets the first one's PENDING top-up (the partial unique index) and stands down
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    await setCreditTopUp(db(), orgA.orgId, customerId, { enabled: true, threshold: '10', target: '100' });
    const client = await db().pool.connect();
    let checks: Promise<CreditGrant[]>[] = [];
    try {
      await client.query('BEGIN');
      await lockCreditCustomer(client, customerId, orgA.orgId);
      checks = [0, 1].map(() => checkTopUps(db(), api.usage.readStores, [{ orgId: orgA.orgId, customerId }]));
      for (const deadline = Date.now() + 10_000; ; ) {
        const { rows } = await db().query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR NO KEY UPDATE OF c%'`,
        );
        if (rows[0]!.n >= 2) break;
        if (Date.now() > deadline) throw new Error('the checks never waited for the customer');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const made = await Promise.all(checks);
    expect(made.map((grants) => grants.length).sort()).toEqual([0, 1]);
    const grants = (await get(`/customers/${customerId}/credit-grants`)).json().data as CreditGrant[];
    expect(grants.map((g) => [g.name, g.status, g.amount])).toEqual([
      ['Automatic top-up', 'PENDING', '100.00000000'],
    ]);
  });

  it('a check asked for another organization leaves the customer alone: a top-up is checked in its own organization only', async () => {
    // no subscription: projected 0.00, below 10.00
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    await setCreditTopUp(db(), orgA.orgId, customerId, { enabled: true, threshold: '10', target: '100' });
    expect(await checkTopUps(db(), api.usage.readStores, [{ orgId: orgB.orgId, customerId }])).toEqual([]);
    expect((await get(`/customers/${customerId}/credit-grants`)).json().data).toEqual([]);
    const made = await checkTopUps(db(), api.usage.readStores, [{ orgId: orgA.orgId, customerId }]);
    expect(made.map((g) => [g.customer_id, g.amount])).toEqual([[customerId, '100.00000000']]);
  });

  it('tops up only below the threshold: projected at it exactly is no top-up', async () => {
    // docs/decisions.md, "Credits": a top-up is made when `projected` falls below `threshold`
    const { customerId, metered } = await customerWithPlan();
    await bill(orgA.orgId, new Date().toISOString());
    await recordUsage(db(), orgA.orgId, metered.id, '60', new Date().toISOString());
    // upcoming 73.50 (as above), available 83.50: projected 10.00
    await grant(customerId, { amount: '83.50', category: 'promotional' });
    expect((await get(`/customers/${customerId}/credit-balance`)).json().data.projected).toBe('10.00000000');
    const setTopUp = async (threshold: string) => {
      const put = await api.request({
        method: 'PUT',
        path: `/customers/${customerId}/credit-top-up`,
        key: orgA.apiKey,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ enabled: true, threshold, target: '100.00' }),
      });
      expect(put.statusCode, put.body).toBe(200);
    };
    const topUps = async () =>
      ((await get(`/customers/${customerId}/credit-grants`)).json().data as CreditGrant[])
        .filter((g) => g.category === 'paid')
        .map((g) => g.amount);
    await setTopUp('10.00');
    await checkTopUps(db(), api.usage.readStores, [{ orgId: orgA.orgId, customerId }]);
    expect(await topUps()).toEqual([]);
    // a cent above projected: 100.00 - 10.00
    await setTopUp('10.01');
    await checkTopUps(db(), api.usage.readStores, [{ orgId: orgA.orgId, customerId }]);
    expect(await topUps()).toEqual(['90.00000000']);
  });
});
