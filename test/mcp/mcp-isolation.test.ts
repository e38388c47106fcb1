import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createCreditNote } from '../../libs/billing/index.js';
import { ApiError } from '../../libs/errors/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { McpServer, type McpTool } from '../../libs/mcp/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runLogger } from '../helpers/run-log.js';
import { type BillingFixture, databaseChecksum, seedBillingFixture } from './mcp-fixtures.js';
import { connectSdkClient, type ListeningApi, startListeningApi, toolJson } from './mcp-server.js';

/** Tenancy and read-only guarantees: what one key can see, and that no call changes anything. */

let api: ListeningApi;
let orgA: TestOrg;
let orgB: TestOrg;
let dataA: BillingFixture;
let dataB: BillingFixture;
let clientA: Client;
let clientB: Client;
let noteOfB: string;

/** A credit note of 1.00 on the first line of a fixture invoice. */
async function creditNoteOn(orgId: number, invoiceId: string): Promise<string> {
  const { db } = api.platform;
  const invoice = await getInvoice(db, orgId, invoiceId);
  const note = await db.transaction((tx) =>
    createCreditNote(tx, {
      orgId,
      invoiceId,
      input: { reason: 'other', lines: [{ invoice_item_id: invoice.items[0]!.id, amount: '1.00' }] },
    }),
  );
  return note.id;
}

beforeAll(async () => {
  api = await startListeningApi();
  orgA = await createTestOrg(api.platform.db);
  orgB = await createTestOrg(api.platform.db);
  dataA = await seedBillingFixture(api.platform.db, orgA.orgId, 'Alpha');
  dataB = await seedBillingFixture(api.platform.db, orgB.orgId, 'Bravo');
  noteOfB = await creditNoteOn(orgB.orgId, dataB.invoices.paid);
  await creditNoteOn(orgA.orgId, dataA.invoices.paid);
  [clientA, clientB] = await Promise.all([
    connectSdkClient(api.mcpUrl, orgA.apiKey),
    connectSdkClient(api.mcpUrl, orgB.apiKey),
  ]);
});
afterAll(async () => {
  await clientA?.close();
  await clientB?.close();
  await api?.close();
});

/** Every tool with arguments that reach as much data as it can, aimed at `target`'s ids. */
function everyCall(target: BillingFixture): { name: string; arguments: Record<string, unknown> }[] {
  return [
    { name: 'list_customers', arguments: { limit: 100 } },
    { name: 'get_customer', arguments: { customer_id: target.customers.quebec } },
    { name: 'list_invoices', arguments: { limit: 100 } },
    { name: 'list_invoices', arguments: { customer_id: target.customers.quebec, limit: 100 } },
    { name: 'list_invoices', arguments: { status: 'POSTED', limit: 100 } },
    { name: 'revenue_summary', arguments: {} },
    { name: 'list_products', arguments: { limit: 100 } },
    { name: 'list_products', arguments: { active: false, limit: 100 } },
    { name: 'recent_payments', arguments: { limit: 100 } },
    { name: 'tax_lookup', arguments: { country: 'CA', state_province: 'QC', amount: '10' } },
    { name: 'get_subscription_usage', arguments: { subscription_id: target.subscriptions.quebec } },
    {
      name: 'get_subscription_usage',
      arguments: { subscription_id: target.subscriptions.quebec, period: 'previous' },
    },
    { name: 'preview_upcoming_invoice', arguments: { subscription_id: target.subscriptions.quebec } },
    { name: 'get_credit_balance', arguments: { customer_id: target.customers.quebec } },
    { name: 'list_alerts', arguments: { limit: 100 } },
    { name: 'list_credit_notes', arguments: { limit: 100 } },
    { name: 'list_credit_notes', arguments: { customer_id: target.customers.quebec, limit: 100 } },
  ];
}

function idsOf(fixture: BillingFixture): string[] {
  return [...Object.values(fixture.invoices), ...Object.values(fixture.payments)];
}

describe('MCP tenancy', () => {
  it("org A's key never reads org B's data through any tool", async () => {
    for (const call of everyCall(dataB)) {
      const result = await clientA.callTool(call);
      const text = JSON.stringify(result.content);
      expect(text, call.name).not.toContain('Bravo');
      for (const id of [...idsOf(dataB), noteOfB]) expect(text, call.name).not.toContain(id);
    }
    for (const args of [{ invoice_id: dataB.invoices.paid }, { customer_id: dataB.customers.ontario }]) {
      const foreignNotes = await clientA.callTool({ name: 'list_credit_notes', arguments: args });
      expect(foreignNotes).toMatchObject({ isError: true });
      expect(JSON.stringify(foreignNotes.content)).not.toContain(noteOfB);
    }
    const foreign = await clientA.callTool({
      name: 'get_customer',
      arguments: { customer_id: dataB.customers.quebec },
    });
    expect(foreign).toMatchObject({ isError: true });
    expect(foreign.content).toEqual([
      { type: 'text', text: `Customer ${dataB.customers.quebec} not found.` },
    ]);
    const foreignInvoices = await clientA.callTool({
      name: 'list_invoices',
      arguments: { customer_id: dataB.customers.quebec },
    });
    expect(toolJson(foreignInvoices)).toMatchObject({ total: 0, invoices: [] });
    const foreignBalance = await clientA.callTool({
      name: 'get_credit_balance',
      arguments: { customer_id: dataB.customers.quebec },
    });
    expect(foreignBalance).toMatchObject({ isError: true });
    expect(foreignBalance.content).toEqual([
      { type: 'text', text: `Customer ${dataB.customers.quebec} not found.` },
    ]);
    for (const name of ['get_subscription_usage', 'preview_upcoming_invoice']) {
      const foreignUsage = await clientA.callTool({
        name,
        arguments: { subscription_id: dataB.subscriptions.quebec },
      });
      expect(foreignUsage, name).toMatchObject({ isError: true });
      expect(foreignUsage.content).toEqual([
        { type: 'text', text: `Subscription ${dataB.subscriptions.quebec} not found.` },
      ]);
    }
  });

  it('each key sees its own data in full', async () => {
    for (const [client, own] of [
      [clientA, dataA],
      [clientB, dataB],
    ] as const) {
      const customers = toolJson(await client.callTool({ name: 'list_customers', arguments: {} })) as {
        customers: { id: number }[];
      };
      expect(customers.customers.map((c) => c.id).sort()).toEqual(Object.values(own.customers).sort());
      const payments = toolJson(await client.callTool({ name: 'recent_payments', arguments: {} })) as {
        payments: { id: string }[];
      };
      expect(payments.payments.map((p) => p.id).sort()).toEqual(Object.values(own.payments).sort());
      const summary = toolJson(await client.callTool({ name: 'revenue_summary', arguments: {} })) as {
        active_subscriptions: number;
      };
      expect(summary.active_subscriptions).toBe(2);
    }
  });
});

describe('MCP tools are read-only', () => {
  it('calling every tool, with both keys, leaves every table byte-for-byte unchanged', async () => {
    const before = await databaseChecksum(api.platform.db);
    expect(Object.keys(before)).toEqual(
      expect.arrayContaining(['customers', 'invoices', 'invoice_transactions', 'products', 'subscriptions']),
    );
    for (const [client, target] of [
      [clientA, dataA],
      [clientB, dataB],
      [clientA, dataB],
    ] as const) {
      for (const call of everyCall(target)) await client.callTool(call);
    }
    await clientA.callTool({ name: 'get_customer', arguments: { customer_id: 999_999 } });
    expect(await databaseChecksum(api.platform.db)).toEqual(before);
  });

  it('runs tools in a READ ONLY transaction: a tool that tried to write would fail, and write nothing', async () => {
    const writer: McpTool = {
      name: 'sneaky_write',
      title: 'Writes',
      description: 'Tries to insert a customer.',
      input: z.strictObject({}),
      async run(_input, { db, orgId }) {
        await db.query(`INSERT INTO customers (org_id, name) VALUES ($1, 'Should not exist')`, [orgId]);
        return { wrote: true };
      },
    };
    const server = new McpServer({ db: api.platform.db, log: runLogger('mcp-test'), tools: [writer] });
    const before = await databaseChecksum(api.platform.db);
    const answer = await server.handleHttpBody(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'sneaky_write' } }),
      { orgId: orgA.orgId },
    );
    expect(answer).toMatchObject({
      status: 200,
      body: {
        id: 1,
        result: { isError: true, content: [{ type: 'text', text: expect.stringMatching(/failed/) }] },
      },
    });
    expect(await databaseChecksum(api.platform.db)).toEqual(before);
  });
});

describe('MCP tool failures', () => {
  it('reports a server-side failure inside a tool as a generic isError result, never its detail', async () => {
    // a 503 and a plain 500 alike: only a 4xx is the caller's to read
    for (const error of [
      ApiError.serviceUnavailable('redis at 10.0.0.7:6379 refused the connection'),
      new ApiError('INTERNAL_SERVER_ERROR', 'pool at 10.0.0.7:5432 exhausted'),
    ]) {
      const failing: McpTool = {
        name: 'down_tool',
        title: 'Fails',
        description: 'Its dependency is down.',
        input: z.strictObject({}),
        async run() {
          throw error;
        },
      };
      const server = new McpServer({ db: api.platform.db, log: runLogger('mcp-test'), tools: [failing] });
      const answer = await server.handleHttpBody(
        JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'down_tool' } }),
        { orgId: orgA.orgId },
      );
      expect(answer).toEqual({
        status: 200,
        body: {
          jsonrpc: '2.0',
          id: 2,
          result: {
            isError: true,
            content: [{ type: 'text', text: 'The down_tool tool failed unexpectedly; try again later.' }],
          },
        },
      });
    }
  });
});
