import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { customerActivity } from '../../libs/mcp/read-models/customer-activity.js';
import { revenueSummary } from '../../libs/mcp/read-models/revenue-summary.js';
import { McpServer } from '../../libs/mcp/server.js';
import type { InvoiceStatus } from '../../libs/schemas/index.js';
import {
  insertCustomer,
  insertInvoice,
  insertProduct,
  insertSubscription,
} from '../helpers/billing-fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { runLogger } from '../helpers/run-log.js';

/**
 * The read models behind get_customer and revenue_summary at their date boundaries: overdue is
 * "due date before today" (an invoice due today is not yet overdue), [from, to] includes both
 * ends, and a WITHDRAWN invoice is not counted as issued (libs/mcp/read-models/revenue-summary.ts;
 * the invoice states are in docs/architecture.md).
 */
const TODAY = '2026-03-15';
let database: TestDatabase;
let orgId: number;
let customerId: number;
let productId: number;

beforeAll(async () => {
  database = await createTestDatabase('mcp-read-models');
  const { db } = database;
  orgId = (await createTestOrg(db)).orgId;
  customerId = (await insertCustomer(db, orgId, { name: 'Boundary', country: 'CA', state_province: 'ON' }))
    .id;
  productId = (await insertProduct(db, orgId, { unitPrice: '10' })).id;
  const subscriptionId = (await insertSubscription(db, orgId, { customerId, items: [{ productId }] })).id;
  let month = 0;
  const invoice = (status: InvoiceStatus, invoiceDate: string, dueDate: string, unitPrice: string) =>
    insertInvoice(db, orgId, {
      customerId,
      subscriptionId,
      status,
      periodStart: `2025-${String(++month).padStart(2, '0')}-01`,
      invoiceDate,
      dueDate,
      currency: 'CAD',
      items: [{ productId, unitPrice }],
    });
  await invoice('POSTED', '2026-02-13', TODAY, '100'); // due today: open, not overdue
  await invoice('POSTED', '2026-02-28', '2026-03-14', '40'); // due yesterday: overdue
  await invoice('WITHDRAWN', '2026-02-28', '2026-03-01', '7'); // never issued
});
afterAll(() => database?.drop());

describe('MCP read models at their boundaries', () => {
  it('get_customer: an invoice due today is open but not yet overdue', async () => {
    const activity = await customerActivity(database.db, orgId, customerId, TODAY);
    expect(activity.open_invoices).toEqual({
      count: 2,
      by_currency: [{ currency: 'CAD', count: 2, balance: '140.00000000', overdue_count: 1 }],
    });
  });

  it('revenue_summary: overdue excludes what is due today, the range includes its last day, WITHDRAWN is not billed', async () => {
    const summary = await revenueSummary(database.db, orgId, { asOf: TODAY });
    expect(summary.by_currency).toEqual([
      expect.objectContaining({
        currency: 'CAD',
        invoice_count: 2,
        billed: '140.00000000',
        outstanding: '140.00000000',
        overdue_count: 1,
        overdue_amount: '40.00000000',
      }),
    ]);
    const lastDay = await revenueSummary(database.db, orgId, {
      from: '2026-02-14',
      to: '2026-02-28',
      asOf: TODAY,
    });
    expect(lastDay.by_currency).toEqual([
      expect.objectContaining({ currency: 'CAD', invoice_count: 1, billed: '40.00000000' }),
    ]);
    const firstDay = await revenueSummary(database.db, orgId, {
      from: '2026-02-13',
      to: '2026-02-13',
      asOf: TODAY,
    });
    expect(firstDay.by_currency).toEqual([
      expect.objectContaining({ currency: 'CAD', invoice_count: 1, billed: '100.00000000' }),
    ]);
  });

  it('a posted invoice with nothing left to pay is never overdue, past its due date or not', async () => {
    const { db } = database;
    const settled = (
      await insertCustomer(db, orgId, { name: 'Nothing due', country: 'CA', state_province: 'ON' })
    ).id;
    const subscriptionId = (
      await insertSubscription(db, orgId, { customerId: settled, items: [{ productId }] })
    ).id;
    await insertInvoice(db, orgId, {
      customerId: settled,
      subscriptionId,
      status: 'POSTED',
      periodStart: '2025-06-01',
      invoiceDate: '2026-01-10',
      dueDate: '2026-02-01',
      currency: 'CAD',
      items: [{ productId, unitPrice: '0' }],
    });
    const activity = await customerActivity(db, orgId, settled, TODAY);
    expect(activity.open_invoices).toEqual({
      count: 1,
      by_currency: [{ currency: 'CAD', count: 1, balance: '0.00000000', overdue_count: 0 }],
    });
    const summary = await revenueSummary(db, orgId, { from: '2026-01-10', to: '2026-01-10', asOf: TODAY });
    expect(summary.by_currency).toEqual([
      expect.objectContaining({
        currency: 'CAD',
        invoice_count: 1,
        billed: '0.00000000',
        outstanding: '0.00000000',
        overdue_count: 0,
        overdue_amount: '0.00000000',
      }),
    ]);
  });
  it('revenue_summary: a currency with active subscriptions and no invoice is listed in order; every subscription counted', async () => {
    const { db } = database;
    const org = (await createTestOrg(db)).orgId;
    const buyer = (
      await insertCustomer(db, org, { name: 'Two currencies', country: 'CA', state_province: 'ON' })
    ).id;
    const product = (await insertProduct(db, org, { unitPrice: '10' })).id;
    const subscribe = (currency: string) =>
      insertSubscription(db, org, { customerId: buyer, currency, items: [{ productId: product }] });
    const usd = await subscribe('USD');
    await subscribe('USD');
    await subscribe('CAD');
    await insertSubscription(db, org, {
      customerId: buyer,
      status: 'canceled',
      currency: 'EUR',
      items: [{ productId: product }],
    });
    await insertInvoice(db, org, {
      customerId: buyer,
      subscriptionId: usd.id,
      status: 'POSTED',
      periodStart: '2026-02-01',
      invoiceDate: '2026-03-01',
      dueDate: '2026-03-31',
      currency: 'USD',
      items: [{ productId: product, unitPrice: '10' }],
    });
    const summary = await revenueSummary(db, org, { asOf: TODAY });
    expect(summary.active_subscriptions).toBe(3);
    expect(
      summary.by_currency.map((row) => [
        row.currency,
        row.invoice_count,
        row.active_subscriptions,
        row.billed,
      ]),
    ).toEqual([
      ['CAD', 0, 1, '0.00000000'],
      ['USD', 1, 2, '10.00000000'],
    ]);
    expect((await customerActivity(db, org, buyer, TODAY)).subscriptions).toEqual({
      total: 4,
      by_status: { active: 3, canceled: 1 },
    });
  });
});

describe('McpServer runs a tool', () => {
  it('in a read-only transaction with a short statement timeout, on the caller organization and the clock date', async () => {
    const server = new McpServer({
      db: database.db,
      log: runLogger(),
      // the last second of a UTC day: the tool still sees that day
      now: () => new Date('2026-03-15T23:59:59.999Z'),
      tools: [
        {
          name: 'session',
          title: 'Session',
          description: 'd',
          input: z.strictObject({}),
          run: async (_input, { db, orgId: caller, today }) => {
            const timeout = await db.query<{ statement_timeout: string }>('SHOW statement_timeout');
            const readOnly = await db.query<{ transaction_read_only: string }>('SHOW transaction_read_only');
            return {
              timeout: timeout.rows[0]?.statement_timeout,
              readOnly: readOnly.rows[0]?.transaction_read_only,
              caller,
              today,
            };
          },
        },
      ],
    });
    const answer = await server.handleHttpBody(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'session' } }),
      // any organization: the tool reads none, it only reports whose it runs for
      { orgId: 424_242 },
    );
    const text = (answer.body as { result: { content: { text: string }[] } }).result.content[0]?.text;
    expect(JSON.parse(text ?? 'null')).toEqual({
      timeout: '10s',
      readOnly: 'on',
      caller: 424_242,
      today: TODAY,
    });
    // SET LOCAL: the pool's own sessions keep their timeout
    const outside = await database.db.query<{ statement_timeout: string }>('SHOW statement_timeout');
    expect(outside.rows[0]?.statement_timeout).not.toBe('10s');
  });
});
