import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling, usageSource } from '../../libs/billing/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { createOrganization } from '../../libs/organizations/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { consoleEnv, inProcessConsole } from '../helpers/console.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { customerIn, productIn, subscribe } from './fixtures.js';

/** `credit-note create` and `credit-note list`: the routes' functions, printed as JSON. */

let database: TestDatabase;
const run = inProcessConsole(() => consoleEnv(database.url));

beforeAll(async () => {
  database = await createTestDatabase('credit_note_console');
}, 60_000);
afterAll(() => database?.drop());

describe('credit-note console commands', () => {
  it('create (with a memo) and list; refusals name the field', async () => {
    const { db } = database;
    const { id: orgId } = await createOrganization(db, { name: 'Console Notes Co' });
    const product = await productIn(db, orgId, {
      name: 'Seats',
      unit_price: '10.00',
      pricing_type: 'recurring',
    });
    const customerId = await customerIn(db, orgId, { state_province: 'ON' });
    const subscription = await subscribe(db, orgId, {
      customer_id: customerId,
      items: [{ product_id: product, quantity: 2 }],
      start_date: new Date('2026-01-01T00:00:00Z'),
    });
    const billed = await runBilling(db, {
      usage: usageSource(new PostgresUsageAggregator(db)),
      orgId,
      subscriptionIds: [subscription.id],
      now: new Date('2026-02-01T00:00:00Z'),
    });
    const invoice = await getInvoice(db, orgId, billed.invoice_ids[0]!);
    const lines = (amount: string) => JSON.stringify([{ invoice_item_id: invoice.items[0]!.id, amount }]);

    const made = await run(
      'credit-note',
      'create',
      '--invoice',
      invoice.id,
      '--lines',
      lines('5.00'),
      '--reason',
      'order_change',
      '--memo',
      'Seat removed',
    );
    expect(made.code, made.stderr).toBe(0);
    // Ontario HST 13 %: 5.00 + 0.65
    expect(made.json()).toMatchObject({
      object: 'credit_note',
      number: 'CN-000001',
      memo: 'Seat removed',
      total: '5.65000000',
      applied_to_invoice: '5.65000000',
    });

    const over = await run(
      'credit-note',
      'create',
      '--invoice',
      invoice.id,
      '--lines',
      lines('15.01'),
      '--reason',
      'other',
    );
    expect(over.code).not.toBe(0);
    expect(over.stderr).toContain('lines.0.amount');
    const badReason = await run(
      'credit-note',
      'create',
      '--invoice',
      invoice.id,
      '--lines',
      lines('1'),
      '--reason',
      'gift',
    );
    expect(badReason.code).not.toBe(0);
    expect(badReason.stderr).toMatch(/reason/);

    const listed = await run('credit-note', 'list', '--invoice', invoice.id);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json().data.map((n: { number: string }) => n.number)).toEqual(['CN-000001']);
    const other = await run('credit-note', 'list', '--invoice', invoice.id, '--org', String(orgId + 1000));
    expect(other.code).not.toBe(0);
  });
});
