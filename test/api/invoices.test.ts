import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listInvoiceTransactions } from '../../libs/invoices/index.js';
import { parseMoney } from '../../libs/money/index.js';
import { INVOICE_STATUSES, type Invoice, type InvoiceTransaction } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import {
  type BillingScenario,
  type InsertedInvoice,
  insertBillingScenario,
  insertCustomer,
  insertInvoice,
  insertProduct,
  insertSubscription,
  insertTransaction,
} from '../helpers/billing-fixtures.js';
import { recordingQueries, type SentQuery } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommonRouteTests } from '../helpers/route-suite.js';

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;
let scenario: BillingScenario;
let invoiceOfB: InsertedInvoice;
let otherCustomerInvoice: InsertedInvoice;

const MISSING_UUID = '00000000-0000-4000-8000-000000000000';

beforeAll(async () => {
  api = await startTestApi();
  const { db } = api.platform;
  orgA = await createTestOrg(db);
  orgB = await createTestOrg(db);
  scenario = await insertBillingScenario(db, orgA.orgId);
  // one more invoice of another customer of A, so the customer filter has something to drop
  otherCustomerInvoice = await insertInvoice(db, orgA.orgId, {
    customerId: scenario.customers.ontario.id,
    subscriptionId: scenario.subscriptions.trialing,
    status: 'POSTED',
    items: [
      {
        productId: scenario.products.seats,
        quantity: '2',
        unitPrice: '49.99',
        taxRate: '0.13',
        taxType: 'HST',
      },
    ],
  });
  const customerOfB = await insertCustomer(db, orgB.orgId, { name: 'B customer' });
  const productOfB = await insertProduct(db, orgB.orgId, { name: 'B product' });
  const subscriptionOfB = await insertSubscription(db, orgB.orgId, {
    customerId: customerOfB.id,
    items: [{ productId: productOfB.id }],
  });
  invoiceOfB = await insertInvoice(db, orgB.orgId, {
    customerId: customerOfB.id,
    subscriptionId: subscriptionOfB.id,
    status: 'PAID',
    items: [{ productId: productOfB.id, quantity: '1', unitPrice: '10' }],
  });
});
afterAll(() => api?.close());

const INVOICE_KEYS = [
  'id',
  'object',
  'invoice_number',
  'customer_id',
  'subscription_id',
  'invoice_date',
  'period_start',
  'period_end',
  'due_date',
  'status',
  'total',
  'amount_paid',
  'amount_refunded',
  'balance',
  'tax_amount',
  'currency',
  'items',
  'created_at',
  'updated_at',
  'hosted_url',
].sort();
const ITEM_KEYS = [
  'id',
  'product_id',
  'description',
  'quantity',
  'unit_price',
  'line_total_pre_tax',
  'tax_amount',
  'tax_type',
].sort();
const MONEY = /^-?\d+\.\d{8}$/;
const DATE = /^\d{4}-\d\d-\d\d$/;

const list = (query = '') => api.request({ path: `/invoices${query}`, key: orgA.apiKey });
const idsOf = (body: { data: Invoice[] }) => body.data.map((i) => i.id);

describe('GET /invoices', () => {
  it('lists invoices with every field: uppercase status, money with 8 digits, quantity with 4, plain dates', async () => {
    const response = await list('?limit=100');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.pagination).toEqual({ limit: 100, offset: 0, total: 8, has_more: false });
    expect(new Set(body.data.map((i: Invoice) => i.status))).toEqual(new Set(INVOICE_STATUSES));
    for (const invoice of body.data as Invoice[]) {
      expect(Object.keys(invoice).sort()).toEqual(INVOICE_KEYS);
      expect(invoice.object).toBe('invoice');
      expect(invoice.invoice_number).toMatch(/^INV-\d{6}$/);
      for (const field of ['total', 'amount_paid', 'amount_refunded', 'balance', 'tax_amount'] as const) {
        expect(invoice[field], field).toMatch(MONEY);
      }
      for (const field of ['invoice_date', 'period_start', 'period_end', 'due_date'] as const) {
        expect(invoice[field], field).toMatch(DATE);
      }
      // balance = total - amount_paid; refunds are not subtracted
      expect(parseMoney(invoice.balance)).toBe(parseMoney(invoice.total) - parseMoney(invoice.amount_paid));
      expect(invoice.items.length).toBeGreaterThan(0);
      for (const item of invoice.items) {
        expect(Object.keys(item).sort()).toEqual(ITEM_KEYS);
        expect(item.quantity).toMatch(/^\d+\.\d{4}$/);
        expect(item.unit_price).toMatch(MONEY);
        expect(item.line_total_pre_tax).toMatch(MONEY);
      }
    }
    expect(response.body).not.toContain(invoiceOfB.id);
  });

  it('carries exact amounts and items in their printed order', async () => {
    const paid = scenario.invoices.PAID;
    const body = (await list('?status=PAID')).json();
    const invoice = body.data[0] as Invoice;
    expect(invoice).toMatchObject({
      id: paid.id,
      status: 'PAID',
      total: paid.total,
      amount_paid: paid.total,
      amount_refunded: '0.00000000',
      balance: '0.00000000',
      currency: 'CAD',
    });
    // 5 x 49.99 = 249.95; 12345.5 x 0.00125 = 15.431875; QC 14.975 %
    expect(invoice.items).toEqual([
      {
        id: expect.any(Number),
        product_id: scenario.products.seats,
        description: 'Seats (5 x Team plan)',
        quantity: '5.0000',
        unit_price: '49.99000000',
        line_total_pre_tax: '249.95000000',
        tax_amount: '37.43001250',
        tax_type: 'GST_QST',
      },
      {
        id: expect.any(Number),
        product_id: scenario.products.apiCalls,
        description: 'API calls above 1,000 included',
        quantity: '12345.5000',
        unit_price: '0.00125000',
        line_total_pre_tax: '15.43187500',
        tax_amount: '2.31092328',
        tax_type: 'GST_QST',
      },
    ]);
    expect(invoice.tax_amount).toBe('39.74093578');
    expect(invoice.total).toBe('305.12281078');
  });

  it('reports refunds without subtracting them from the balance', async () => {
    const refunded = (await list('?status=REFUNDED')).json().data[0] as Invoice;
    expect(refunded.amount_refunded).toBe(refunded.total);
    expect(refunded.amount_paid).toBe(refunded.total);
    expect(refunded.balance).toBe('0.00000000');
    const partial = (await list('?status=PARTIALLY_PAID')).json().data[0] as Invoice;
    expect(parseMoney(partial.balance)).toBeGreaterThan(0n);
  });

  it('sorts newest first, ties broken by id descending', async () => {
    const body = (await list('?limit=100')).json();
    const rows = await api.platform.db.query<{ id: string }>(
      'SELECT id FROM invoices WHERE org_id = $1 ORDER BY created_at DESC, id DESC',
      [orgA.orgId],
    );
    expect(idsOf(body)).toEqual(rows.rows.map((r) => r.id));
    expect(idsOf(body)[0]).toBe(otherCustomerInvoice.id);
  });

  it('filters on customer_id and status, composing with each other and with paging', async () => {
    const { quebec, ontario } = scenario.customers;
    const quebecOnly = (await list(`?customer_id=${quebec.id}&limit=100`)).json();
    expect(quebecOnly.pagination.total).toBe(7);
    expect(quebecOnly.data.every((i: Invoice) => i.customer_id === quebec.id)).toBe(true);

    const posted = (await list('?status=POSTED')).json();
    expect(new Set(idsOf(posted))).toEqual(new Set([scenario.invoices.POSTED.id, otherCustomerInvoice.id]));
    const both = (await list(`?status=POSTED&customer_id=${ontario.id}`)).json();
    expect(idsOf(both)).toEqual([otherCustomerInvoice.id]);
    expect(both.pagination).toEqual({ limit: 25, offset: 0, total: 1, has_more: false });

    const pageOne = (await list(`?customer_id=${quebec.id}&limit=3`)).json();
    const pageTwo = (await list(`?customer_id=${quebec.id}&limit=3&offset=3`)).json();
    const pageThree = (await list(`?customer_id=${quebec.id}&limit=3&offset=6`)).json();
    expect([...idsOf(pageOne), ...idsOf(pageTwo), ...idsOf(pageThree)]).toEqual(idsOf(quebecOnly));
    expect([pageOne, pageTwo, pageThree].map((p) => p.pagination.has_more)).toEqual([true, true, false]);
    expect(pageThree.pagination).toEqual({ limit: 3, offset: 6, total: 7, has_more: false });
  });

  it('rejects a lowercase or unknown status (OVERDUE and VOID do not exist) and a non-integer customer_id', async () => {
    for (const [query, field] of [
      ['?status=posted', 'status'],
      ['?status=OVERDUE', 'status'],
      ['?status=VOID', 'status'],
      ['?customer_id=abc', 'customer_id'],
      ['?customer_id=', 'customer_id'],
      ['?customer_id=1e2', 'customer_id'],
    ] as const) {
      const response = await list(query);
      expect(response.statusCode, query).toBe(422);
      expect(
        response.json().details.map((d: { field: string }) => d.field),
        query,
      ).toEqual([field]);
    }
    // a positive integer, but past any id: the message says where ids end
    const huge = await list('?customer_id=9999999999999999');
    expect(huge.statusCode).toBe(422);
    expect(huge.json().details[0].message).toBe('Must be a positive integer, at most 9007199254740991.');
  });

  describe('common route checks', () => {
    runCommonRouteTests(() => ({ api, key: orgA.apiKey, request: { method: 'GET', path: '/invoices' } }));
  });
});

describe('GET /invoices/{invoice_id}', () => {
  it('retrieves one invoice with its items', async () => {
    const { id, invoiceNumber } = scenario.invoices.PARTIALLY_REFUNDED;
    const response = await api.request({ path: `/invoices/${id}`, key: orgA.apiKey });
    expect(response.statusCode).toBe(200);
    const invoice = response.json().data as Invoice;
    expect(invoice).toMatchObject({ id, invoice_number: invoiceNumber, status: 'PARTIALLY_REFUNDED' });
    expect(invoice.items).toHaveLength(2);
    expect(parseMoney(invoice.amount_refunded)).toBeGreaterThan(0n);
    expect(invoice.balance).toBe('0.00000000');
  });

  it('lists the items in their printed order (position), not the order they were written in', async () => {
    const { db } = api.platform;
    const invoice = await insertInvoice(db, orgA.orgId, {
      customerId: scenario.customers.ontario.id,
      subscriptionId: scenario.subscriptions.trialing,
      status: 'DRAFT',
      items: ['written first', 'written second', 'written third'].map((description) => ({
        productId: scenario.products.seats,
        description,
      })),
    });
    await db.query('UPDATE invoice_items SET position = 2 - position WHERE invoice_id = $1', [invoice.id]);
    const response = await api.request({ path: `/invoices/${invoice.id}`, key: orgA.apiKey });
    expect(response.statusCode).toBe(200);
    expect((response.json().data as Invoice).items.map((item) => item.description)).toEqual([
      'written third',
      'written second',
      'written first',
    ]);
  });

  it("retrieves an invoice for its own organization's key, whichever organization that is", async () => {
    const response = await api.request({ path: `/invoices/${invoiceOfB.id}`, key: orgB.apiKey });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({
      id: invoiceOfB.id,
      invoice_number: invoiceOfB.invoiceNumber,
    });
  });

  it('accepts an uppercase UUID and answers 404 for anything that is not a UUID', async () => {
    const { id } = scenario.invoices.DRAFT;
    const upper = await api.request({ path: `/invoices/${id.toUpperCase()}`, key: orgA.apiKey });
    expect(upper.statusCode).toBe(200);
    for (const bad of ['123', 'not-a-uuid', `${id}x`]) {
      const response = await api.request({ path: `/invoices/${bad}`, key: orgA.apiKey });
      expect(response.statusCode, bad).toBe(404);
      expect(response.json().error_code).toBe('NOT_FOUND');
    }
  });

  describe('common route checks', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: orgA.apiKey,
        request: { method: 'GET', path: `/invoices/${scenario.invoices.POSTED.id}` },
        crossOrg: { path: (id) => `/invoices/${id}`, foreignId: invoiceOfB.id, missingId: MISSING_UUID },
      }),
      { namesRecord: true },
    );
  });
});

describe('GET /invoices/{invoice_id}/transactions', () => {
  const transactions = (invoiceId: string, query = '') =>
    api.request({ path: `/invoices/${invoiceId}/transactions${query}`, key: orgA.apiKey });

  it('lists the payments, credit memos and refunds behind the balance, enums uppercase, newest first', async () => {
    const invoice = scenario.invoices.PARTIALLY_REFUNDED;
    const response = await transactions(invoice.id);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.pagination).toEqual({ limit: 25, offset: 0, total: 2, has_more: false });
    for (const transaction of body.data as InvoiceTransaction[]) {
      expect(Object.keys(transaction).sort()).toEqual(
        [
          'id',
          'object',
          'invoice_id',
          'type',
          'amount',
          'method',
          'status',
          'reference',
          'note',
          'credit_grant_id',
          'created_at',
        ].sort(),
      );
      expect(transaction).toMatchObject({ object: 'invoice_transaction', invoice_id: invoice.id });
      expect(transaction.amount).toMatch(MONEY);
    }
    // the refund was recorded after the payment
    expect(body.data.map((t: InvoiceTransaction) => [t.type, t.method, t.status])).toEqual([
      ['REFUND', 'STRIPE', 'COMPLETED'],
      ['PAYMENT', 'STRIPE', 'COMPLETED'],
    ]);
  });

  it('pages a longer timeline and includes credit memos and failed payments', async () => {
    const invoice = scenario.invoices.POSTED;
    const base = Date.parse('2026-05-01T00:00:00Z');
    const kinds = [
      { type: 'PAYMENT', status: 'FAILED', method: 'CARD' },
      { type: 'CREDIT_MEMO', status: 'COMPLETED', method: 'EXTERNAL' },
      { type: 'PAYMENT', status: 'PENDING', method: 'PAYPAL' },
      { type: 'PAYMENT', status: 'REFUNDED', method: 'BANK_TRANSFER' },
    ] as const;
    const ids: string[] = [];
    for (const [n, kind] of kinds.entries()) {
      ids.push(
        await insertTransaction(api.platform.db, orgA.orgId, invoice.id, {
          ...kind,
          amount: '1.5',
          reference: `ref-${n}`,
          note: n === 0 ? 'card declined' : null,
          createdAt: new Date(base + n * 1000),
        }),
      );
    }
    const first = (await transactions(invoice.id, '?limit=3')).json();
    expect(first.pagination).toEqual({ limit: 3, offset: 0, total: 4, has_more: true });
    expect(first.data.map((t: InvoiceTransaction) => t.id)).toEqual([ids[3], ids[2], ids[1]]);
    const second = (await transactions(invoice.id, '?limit=3&offset=3')).json();
    expect(second.pagination).toEqual({ limit: 3, offset: 3, total: 4, has_more: false });
    expect(second.data.map((t: InvoiceTransaction) => t.id)).toEqual([ids[0]]);
    expect(second.data[0]).toMatchObject({
      type: 'PAYMENT',
      status: 'FAILED',
      method: 'CARD',
      amount: '1.50000000',
      reference: 'ref-0',
      note: 'card declined',
    });
    expect((await transactions(invoice.id, '?limit=101')).statusCode).toBe(422);
  });

  it('orders transactions recorded at the same instant by id, newest first, the same on every page', async () => {
    const invoice = scenario.invoices.POSTED;
    const createdAt = new Date('2026-06-01T00:00:00Z'); // after every other transaction of the invoice
    const tied: string[] = [];
    for (let n = 0; n < 3; n++) {
      tied.push(
        await insertTransaction(api.platform.db, orgA.orgId, invoice.id, {
          type: 'PAYMENT',
          status: 'FAILED',
          method: 'CARD',
          amount: '2',
          reference: `tie-${n}`,
          createdAt,
        }),
      );
    }
    // created_at DESC, id DESC (libs/list-pages/README.md): a UUID orders as its hex text does
    const expected = [...tied].sort().reverse();
    const first = (await transactions(invoice.id, '?limit=2')).json();
    const second = (await transactions(invoice.id, '?limit=1&offset=2')).json();
    expect([...first.data, ...second.data].map((t: InvoiceTransaction) => t.id)).toEqual(expected);
  });

  it('orders tied transactions by id even when Postgres sorts the rows instead of reading its index', async () => {
    const { db } = api.platform;
    const invoice = scenario.invoices.POSTED;
    // later than every other transaction of the invoice, and written in ascending id order
    const ids = [randomUUID(), randomUUID(), randomUUID()].sort();
    for (const id of ids) {
      await db.query(
        `INSERT INTO invoice_transactions (id, org_id, invoice_id, type, amount, method, status, created_at, updated_at)
         VALUES ($1, $2, $3, 'PAYMENT', 2, 'CARD', 'FAILED', '2026-07-01T00:00:00Z', '2026-07-01T00:00:00Z')`,
        [id, orgA.orgId, invoice.id],
      );
    }
    // what a large organization's timeline may get: a sequential scan and a sort, not the index order
    const page = await db.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_indexscan = off');
      await tx.query('SET LOCAL enable_bitmapscan = off');
      return listInvoiceTransactions(tx, orgA.orgId, invoice.id, { limit: 3, offset: 0 });
    });
    expect(page.data.map((t) => t.id)).toEqual([...ids].reverse());
  });

  it('counts the timeline only when a page cannot tell its total', async () => {
    const invoice = scenario.invoices.PARTIALLY_REFUNDED; // 2 transactions
    const sent: SentQuery[] = [];
    const db = recordingQueries(api.platform.db, sent);
    const short = await listInvoiceTransactions(db, orgA.orgId, invoice.id, { limit: 25, offset: 0 });
    expect(short.total).toBe(2);
    expect(sent).toHaveLength(2); // the invoice's existence and the page: a short page is the last
    sent.length = 0;
    const full = await listInvoiceTransactions(db, orgA.orgId, invoice.id, { limit: 1, offset: 0 });
    expect(full).toMatchObject({ total: 2, data: [short.data[0]] });
    expect(sent).toHaveLength(3); // a full page: the total is counted
  });

  it('answers an empty list for an invoice without transactions and 404 for a non-UUID id', async () => {
    const draft = (await transactions(scenario.invoices.DRAFT.id)).json();
    expect(draft).toEqual({ data: [], pagination: { limit: 25, offset: 0, total: 0, has_more: false } });
    const bad = await transactions('42');
    expect(bad.statusCode).toBe(404);
  });

  describe('common route checks', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: orgA.apiKey,
        request: { method: 'GET', path: `/invoices/${scenario.invoices.PAID.id}/transactions` },
        crossOrg: {
          path: (id) => `/invoices/${id}/transactions`,
          foreignId: invoiceOfB.id,
          missingId: MISSING_UUID,
        },
      }),
      { namesRecord: true },
    );
  });
});
