import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCreditGrant } from '../../libs/billing/index.js';
import { PostgresUsageSink } from '../../libs/usage/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { type BillingFixture, seedBillingFixture } from './mcp-fixtures.js';
import { connectSdkClient, type ListeningApi, startListeningApi, toolJson } from './mcp-server.js';

const TOOL_NAMES = [
  'list_customers',
  'get_customer',
  'list_invoices',
  'revenue_summary',
  'list_products',
  'recent_payments',
  'tax_lookup',
  'get_subscription_usage',
  'preview_upcoming_invoice',
  'get_credit_balance',
  'list_alerts',
  'list_credit_notes',
  'get_entitlements',
];

function isoDate(offsetDays: number): string {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

let api: ListeningApi;
let org: TestOrg;
let data: BillingFixture;
let client: Client;

beforeAll(async () => {
  api = await startListeningApi();
  org = await createTestOrg(api.platform.db);
  data = await seedBillingFixture(api.platform.db, org.orgId, 'Acme');
  client = await connectSdkClient(api.mcpUrl, org.apiKey);
});
afterAll(async () => {
  await client?.close();
  await api?.close();
});

async function call(name: string, args: Record<string, unknown> = {}) {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError).toBe(false);
  return toolJson(result) as Record<string, unknown>;
}

describe('the official MCP SDK client against the endpoint', () => {
  it('connects: negotiates the latest protocol version and reads the server info and capabilities', () => {
    expect(client.getServerVersion()).toMatchObject({ name: 'billing-public-api', version: '2026-11-20' });
    expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: false } });
    expect(client.getInstructions()).toMatch(/read-only/i);
  });

  it('lists the thirteen read-only tools, each with an object JSON Schema for its arguments', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(TOOL_NAMES);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.description).toBeTruthy();
      expect(tool.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    }
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool.inputSchema]));
    expect(byName.get_customer).toMatchObject({ required: ['customer_id'], additionalProperties: false });
    expect(byName.list_invoices!.properties).toMatchObject({
      status: { enum: ['POSTED', 'PARTIALLY_PAID', 'PAID'] },
      customer_id: { type: 'integer' },
      limit: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
    });
    expect(byName.tax_lookup).toMatchObject({ required: ['country'] });
    expect(Object.keys(byName.revenue_summary!.properties ?? {})).toEqual(['from', 'to']);
  });

  it('list_customers: newest first, with the locale and the tax-exempt flag', async () => {
    const result = await call('list_customers', { limit: 2 });
    expect(result).toMatchObject({ total: 3, returned: 2 });
    expect(result.customers).toEqual([
      expect.objectContaining({
        id: data.customers.newYork,
        name: 'Acme New York Client',
        locale: 'en-US',
        tax_exempt: true,
        credit_balance: '0.00000000',
      }),
      expect.objectContaining({ id: data.customers.ontario, locale: 'en-CA', tax_exempt: false }),
    ]);
    const all = await call('list_customers');
    expect((all.customers as { locale: string }[]).map((c) => c.locale)).toEqual(['en-US', 'en-CA', 'fr-CA']);
  });

  it('get_customer: the customer with open-invoice and subscription counts', async () => {
    const result = await call('get_customer', { customer_id: data.customers.quebec });
    expect(result.customer).toMatchObject({
      object: 'customer',
      id: data.customers.quebec,
      name: 'Acme Quebec Client',
      locale: 'fr-CA',
    });
    expect(result.customer).not.toHaveProperty('notes');
    expect(result.open_invoices).toEqual({
      count: 2,
      by_currency: [{ currency: 'CAD', count: 2, balance: '259.97500000', overdue_count: 1 }],
    });
    expect(result.subscriptions).toEqual({ total: 1, by_status: { active: 1 } });
  });

  it('list_invoices: by status and customer, newest first, with exact amounts and the overdue flag', async () => {
    const all = await call('list_invoices');
    expect(all).toMatchObject({ total: 5, returned: 5 });
    const posted = await call('list_invoices', { status: 'POSTED' });
    expect(posted.invoices).toEqual([
      expect.objectContaining({
        id: data.invoices.postedUsd,
        status: 'POSTED',
        currency: 'USD',
        total: '100.00000000',
        balance: '100.00000000',
        overdue: true,
      }),
      expect.objectContaining({
        id: data.invoices.posted,
        total: '114.97500000',
        tax_amount: '14.97500000',
        amount_paid: '0.00000000',
        overdue: true,
        item_count: 1,
      }),
    ]);
    const quebecPartial = await call('list_invoices', {
      status: 'PARTIALLY_PAID',
      customer_id: data.customers.quebec,
      limit: 1,
    });
    expect(quebecPartial.invoices).toEqual([
      expect.objectContaining({ id: data.invoices.partiallyPaid, balance: '145.00000000', overdue: false }),
    ]);
    const ontarioPaid = await call('list_invoices', { status: 'PAID', customer_id: data.customers.quebec });
    expect(ontarioPaid).toMatchObject({ total: 0, invoices: [] });
  });

  it('revenue_summary: billed, paid, outstanding and overdue per currency, and active subscriptions', async () => {
    const all = await call('revenue_summary');
    // the fixture's invoices are older, sub-cent ones: each sum is reported rounded half-up to the cent
    expect(all).toEqual({
      from: null,
      to: null,
      as_of: isoDate(0),
      active_subscriptions: 2,
      by_currency: [
        {
          currency: 'CAD',
          invoice_count: 3,
          billed: '427.98000000',
          tax: '27.98000000',
          paid: '168.00000000',
          refunded: '0.00000000',
          outstanding: '259.98000000',
          overdue_count: 1,
          overdue_amount: '114.98000000',
          active_subscriptions: 1,
        },
        {
          currency: 'USD',
          invoice_count: 1,
          billed: '100.00000000',
          tax: '0.00000000',
          paid: '0.00000000',
          refunded: '0.00000000',
          outstanding: '100.00000000',
          overdue_count: 1,
          overdue_amount: '100.00000000',
          active_subscriptions: 1,
        },
      ],
    });
    const window = await call('revenue_summary', { from: isoDate(-45), to: isoDate(-20) });
    expect(window.by_currency).toEqual([
      expect.objectContaining({
        currency: 'CAD',
        invoice_count: 1,
        billed: '114.98000000',
        paid: '0.00000000',
      }),
      expect.objectContaining({ currency: 'USD', invoice_count: 1, billed: '100.00000000' }),
    ]);
  });

  it('get_subscription_usage and preview_upcoming_invoice: the figures of the REST read-back', async () => {
    const db = api.platform.db;
    const subscriptionId = data.subscriptions.quebec;
    const { rows } = await db.query<{ item: number; start: Date }>(
      `SELECT si.id AS item, s.current_period_start AS start FROM subscriptions s
         JOIN subscription_items si ON si.org_id = s.org_id AND si.subscription_id = s.id
        WHERE s.org_id = $1 AND s.id = $2 AND si.usage_type = 'metered'`,
      [org.orgId, subscriptionId],
    );
    const { item, start } = rows[0]!;
    for (const [key, quantity] of [
      ['mcp-1', '1500'],
      ['mcp-2', '250.5'],
    ]) {
      await new PostgresUsageSink(db).write([
        {
          id: randomUUID(),
          orgId: org.orgId,
          subscriptionItemId: item,
          idempotencyKey: key!,
          quantity: quantity!,
          occurredAtMs: start.getTime() + 3_600_000,
          recordedAtMs: Date.now(),
        },
      ]);
    }
    const rest = async (path: string) =>
      (await api.request({ method: 'GET', path, key: org.apiKey })).json().data as Record<string, unknown>;
    const withoutClock = ({ as_of: _, lag_seconds: __, ...rest }: Record<string, unknown>) => rest;

    const usage = await call('get_subscription_usage', { subscription_id: subscriptionId });
    expect(withoutClock(usage)).toEqual(withoutClock(await rest(`/subscriptions/${subscriptionId}/usage`)));
    expect(usage.items).toEqual([
      expect.objectContaining({
        subscription_item_id: item,
        quantity: '1750.50000000',
        included_units: '1000.00000000',
        billable_quantity: '750.50000000',
      }),
    ]);
    const previous = await call('get_subscription_usage', {
      subscription_id: subscriptionId,
      period: 'previous',
    });
    expect(previous.period_end).toBe(usage.period_start);

    const preview = await call('preview_upcoming_invoice', { subscription_id: subscriptionId });
    expect(withoutClock(preview)).toEqual(
      withoutClock(await rest(`/subscriptions/${subscriptionId}/upcoming-invoice`)),
    );
    expect(preview).toMatchObject({
      object: 'upcoming_invoice',
      subscription_id: subscriptionId,
      tax_type: 'GST_QST',
    });

    // the customer's credit balance: the upcoming invoice is its `pending`, as over REST
    const customerId = data.customers.quebec;
    await db.transaction((tx) =>
      createCreditGrant(tx, { customerId, input: { amount: '25.00', category: 'promotional' } }),
    );
    const balance = await call('get_credit_balance', { customer_id: customerId });
    expect(withoutClock(balance)).toEqual(
      withoutClock(await rest(`/customers/${customerId}/credit-balance`)),
    );
    expect(balance).toMatchObject({
      object: 'credit_balance',
      customer_id: customerId,
      available: '25.00000000',
    });
    expect(balance.pending).toBe(preview.total);

    // the customer's alerts: what GET /alerts lists
    const made = await api.request({
      method: 'POST',
      path: '/alerts',
      key: org.apiKey,
      payload: { subscription_id: subscriptionId, metric: 'usage_amount', threshold: '1' },
    });
    expect(made.statusCode, made.body).toBe(201);
    const alerts = await call('list_alerts', { customer_id: customerId });
    expect(alerts.total).toBe(1);
    expect(alerts.alerts).toEqual((await rest(`/alerts?customer_id=${customerId}`)) as unknown as unknown[]);
    // subscription_id filters too: the alert is of this subscription, none of another's
    expect((await call('list_alerts', { subscription_id: subscriptionId })).total).toBe(1);
    expect((await call('list_alerts', { subscription_id: data.subscriptions.ontario })).total).toBe(0);
    // and customer_id: another customer of the organization has none
    expect((await call('list_alerts', { customer_id: data.customers.ontario })).total).toBe(0);

    // entitlements: what GET /customers/{id}/entitlements answers, one product's too
    const entitlements = await call('get_entitlements', { customer_id: customerId });
    const listed = (await rest(`/customers/${customerId}/entitlements`)) as unknown as {
      product_id: number;
    }[];
    expect(listed.length).toBeGreaterThan(0);
    expect(entitlements.data).toEqual(listed);
    const one = await call('get_entitlements', {
      customer_id: customerId,
      product_id: listed[0]!.product_id,
    });
    expect(one.data).toEqual(await rest(`/customers/${customerId}/entitlements/${listed[0]!.product_id}`));
  });

  it('list_credit_notes: what GET /invoices/{id}/credit-notes lists, by invoice or by customer', async () => {
    const response = await api.request({ path: `/invoices/${data.invoices.paid}`, key: org.apiKey });
    const invoice = response.json().data as { id: string; customer_id: number; items: { id: number }[] };
    const made = await api.request({
      method: 'POST',
      path: `/invoices/${invoice.id}/credit-notes`,
      key: org.apiKey,
      payload: { reason: 'order_change', lines: [{ invoice_item_id: invoice.items[0]!.id, amount: '2.00' }] },
    });
    expect(made.statusCode, made.body).toBe(201);
    const byInvoice = await call('list_credit_notes', { invoice_id: invoice.id });
    expect(byInvoice.total).toBe(1);
    const listed = await api.request({ path: `/invoices/${invoice.id}/credit-notes`, key: org.apiKey });
    expect(byInvoice.credit_notes).toEqual(listed.json().data);
    const byCustomer = await call('list_credit_notes', { customer_id: invoice.customer_id });
    expect(byCustomer.credit_notes).toEqual(byInvoice.credit_notes);
    expect((await call('list_credit_notes', { customer_id: data.customers.quebec })).total).toBe(0);
    // limit caps the notes returned, not the total
    const second = await api.request({
      method: 'POST',
      path: `/invoices/${invoice.id}/credit-notes`,
      key: org.apiKey,
      payload: { reason: 'order_change', lines: [{ invoice_item_id: invoice.items[0]!.id, amount: '1.00' }] },
    });
    expect(second.statusCode, second.body).toBe(201);
    const capped = await call('list_credit_notes', { invoice_id: invoice.id, limit: 1 });
    expect(capped.total).toBe(2);
    expect(capped.credit_notes).toHaveLength(1);
  });

  it('list_products: prices, the active filter and the tiers of tiered products', async () => {
    const all = await call('list_products');
    expect(all).toMatchObject({ total: 3, returned: 3 });
    const active = await call('list_products', { active: true });
    expect(active.products).toEqual([
      expect.objectContaining({
        id: data.products.tiered,
        pricing_scheme: 'tiered',
        pricing_mode: 'graduated',
        tiers: [
          { up_to: '1000.00000000', unit_price: '0.01000000', flat_fee: '0.00000000' },
          { up_to: null, unit_price: '0.00500000', flat_fee: '5.00000000' },
        ],
      }),
      expect.objectContaining({ id: data.products.flat, unit_price: '49.99000000', currency: 'CAD' }),
    ]);
    expect(active.products as object[]).not.toContainEqual(
      expect.objectContaining({ id: data.products.inactive }),
    );
    expect((active.products as object[])[1]).not.toHaveProperty('tiers');
    const inactive = await call('list_products', { active: false, limit: 5 });
    expect(inactive.products).toEqual([
      expect.objectContaining({ id: data.products.inactive, is_active: false }),
    ]);
  });

  it('recent_payments: payments across invoices, newest first, without credit memos', async () => {
    const result = await call('recent_payments');
    expect(result.payments).toEqual([
      expect.objectContaining({ id: data.payments.failed, amount: '25.00000000', status: 'FAILED' }),
      expect.objectContaining({
        id: data.payments.partial,
        invoice_id: data.invoices.partiallyPaid,
        invoice_number: 'INV-000002',
        customer_id: data.customers.quebec,
        customer_name: 'Acme Quebec Client',
        amount: '50.00000000',
        currency: 'CAD',
        method: 'BANK_TRANSFER',
        status: 'COMPLETED',
      }),
      expect.objectContaining({ id: data.payments.full, amount: '113.00000000' }),
    ]);
    expect((await call('recent_payments', { limit: 1 })).returned).toBe(1);
  });

  it('tax_lookup: the billing engine rule for a destination, and exact tax lines for an amount', async () => {
    expect(await call('tax_lookup', { country: 'ca', state_province: 'qc', amount: '100.00' })).toEqual({
      country: 'CA',
      date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      state_province: 'QC',
      tax_type: 'GST_QST',
      rate: '0.14975',
      components: [
        { name: 'GST', jurisdiction: 'CA', rate: '0.05' },
        { name: 'QST', jurisdiction: 'QC', rate: '0.09975' },
      ],
      note: expect.any(String),
      amount: '100.00000000',
      tax_lines: [
        { name: 'GST', jurisdiction: 'CA', rate: '0.05', amount: '5.00000000' },
        { name: 'QST', jurisdiction: 'QC', rate: '0.09975', amount: '9.98000000' },
      ],
      tax_amount: '14.98000000',
      total_with_tax: '114.98000000',
    });
    expect(await call('tax_lookup', { country: 'US', state_province: 'OR' })).toMatchObject({
      tax_type: 'US_SALES_TAX',
      rate: '0',
    });
  });

  it('reports a failing tool as a result with isError, not as a protocol error', async () => {
    const result = await client.callTool({ name: 'get_customer', arguments: { customer_id: 987654 } });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'Customer 987654 not found.' }]);
  });

  it('rejects an unknown tool with -32602 and reports invalid arguments as a result with isError', async () => {
    const unknown = await client.callTool({ name: 'delete_everything', arguments: {} }).catch((e) => e);
    expect(unknown).toBeInstanceOf(McpError);
    expect(unknown.code).toBe(-32602);
    const invalid = await client.callTool({ name: 'list_invoices', arguments: { limit: 500 } });
    expect(invalid.isError).toBe(true);
    expect(invalid.content).toEqual([
      { type: 'text', text: 'Invalid arguments for list_invoices: limit: Must be at most 100.' },
    ]);
  });

  it('answers ping', async () => {
    await expect(client.ping()).resolves.toEqual({});
  });
});
