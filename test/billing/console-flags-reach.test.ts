import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleEnv, inProcessConsole } from '../helpers/console.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * Each optional flag of the console's commands reaches the record it names: a flag the command
 * parses but never passes on would be accepted and silently ignored.
 */

let database: TestDatabase;
const run = inProcessConsole(() => consoleEnv(database.url));

beforeAll(async () => {
  database = await createTestDatabase('console_flags_reach');
}, 60_000);
afterAll(() => database?.drop());

/** Runs a command that must succeed and returns its JSON. */
async function ok(...argv: string[]) {
  const result = await run(...argv);
  expect(result.code, `${argv.join(' ')}: ${result.stderr}`).toBe(0);
  return result.json();
}

/** An organization with one Alberta customer (5 % GST) on a monthly plan of 100.00 from May 1, 2026. */
async function subscribedCustomer(name: string) {
  const org = String((await ok('org', 'create', '--name', name)).id);
  const plan = await ok(
    ...['product', 'create', '--org', org, '--name', 'Plan', '--unit-price', '100'],
    ...['--pricing-type', 'recurring'],
  );
  const customer = await ok('customer', 'create', '--org', org, '--name', 'Payer', '--state-province', 'AB');
  const subscription = await ok(
    ...['subscription', 'create', '--org', org, '--customer', String(customer.id)],
    ...['--items', JSON.stringify([{ product_id: plan.id }]), '--start', '2026-05-01'],
  );
  return { org, customer: String(customer.id), subscription };
}

/** Bills the subscription's May period and returns its posted invoice (105.00). */
async function mayInvoice(org: string): Promise<string> {
  const billed = await ok('billing', 'run', '--now', '2026-06-01', '--org', org);
  expect(billed.invoice_ids).toHaveLength(1);
  return billed.invoice_ids[0];
}

describe('console flags reach the record', () => {
  it('product create stores every optional flag given, and --inactive makes it inactive', async () => {
    const org = String((await ok('org', 'create', '--name', 'Catalog Co', '--currency', 'USD')).id);
    const product = await ok(
      ...['product', 'create', '--org', org, '--name', 'Support', '--unit-price', '40'],
      ...['--pricing-type', 'recurring', '--pricing-model', 'flat_fee', '--currency', 'CAD'],
      ...['--category', 'support', '--sku', 'SUP-1', '--description', 'Phone support'],
      ...['--unit-label', 'month', '--billing-period', 'quarterly', '--product-type', 'bundle'],
      ...['--external-id', 'prod_sup', '--metadata', '{"tier":"gold"}', '--inactive'],
    );
    expect(product).toMatchObject({
      name: 'Support',
      unit_price: '40.00000000',
      pricing_type: 'recurring',
      pricing_model: 'flat_fee',
      currency: 'CAD',
      category: 'support',
      sku: 'SUP-1',
      description: 'Phone support',
      unit_label: 'month',
      default_billing_period: 'quarterly',
      product_type: 'bundle',
      external_id: 'prod_sup',
      metadata: { tier: 'gold' },
      is_active: false,
    });
    // left out, each takes the product's default: active, the organization's currency
    const plain = await ok(
      ...['product', 'create', '--org', org, '--name', 'Plain', '--unit-price', '1'],
      ...['--pricing-type', 'recurring'],
    );
    expect(plain).toMatchObject({ is_active: true, currency: 'USD', pricing_model: 'per_unit' });
  });

  it('payment record, credit-memo create and refund create keep their --method and --note', async () => {
    const { org } = await subscribedCustomer('Notes Co');
    const invoice = await mayInvoice(org);
    const paid = await ok(
      ...['payment', 'record', '--invoice', invoice, '--amount', '100', '--method', 'PAYPAL'],
      ...['--note', 'order 1042'],
    );
    expect(paid).toMatchObject({ type: 'PAYMENT', method: 'PAYPAL', note: 'order 1042' });
    const memo = await ok(
      ...['credit-memo', 'create', '--invoice', invoice, '--amount', '5', '--note', 'goodwill'],
    );
    expect(memo).toMatchObject({ type: 'CREDIT_MEMO', note: 'goodwill', invoice: { balance: '0.00000000' } });
    const refund = await ok(
      ...['refund', 'create', '--invoice', invoice, '--amount', '10', '--method', 'BANK_TRANSFER'],
      ...['--note', 'partial refund'],
    );
    expect(refund).toMatchObject({ type: 'REFUND', method: 'BANK_TRANSFER', note: 'partial refund' });
  });

  it("alert create within another organization's --org finds no subscription, creating nothing", async () => {
    const { org, subscription } = await subscribedCustomer('Alerted Co');
    const other = String((await ok('org', 'create', '--name', 'Elsewhere Co')).id);
    const alert = ['alert', 'create', '--subscription', String(subscription.id), '--metric', 'usage_amount'];
    const refused = await run(...alert, '--threshold', '50', '--org', other);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error \(NOT_FOUND\): Subscription \d+ not found/);
    expect((await ok('alert', 'list', '--org', other)).data).toEqual([]);
    expect((await ok('alert', 'list', '--org', org)).data).toEqual([]);
    const made = await ok(...alert, '--threshold', '50', '--org', org);
    expect((await ok('alert', 'list', '--org', org)).data.map((a: { id: string }) => a.id)).toEqual([
      made.id,
    ]);
  });

  it('credit list keeps to --org, --status and the page asked for', async () => {
    const { org, customer } = await subscribedCustomer('Granted Co');
    const grant = (amount: string) =>
      ok('credit', 'grant', '--customer', customer, '--amount', amount, '--category', 'promotional');
    const first = await grant('5');
    const second = await grant('6');
    await ok('credit', 'void', '--id', first.id);
    const ids = async (...flags: string[]) =>
      (await ok('credit', 'list', '--customer', customer, ...flags)).data.map((g: { id: string }) => g.id);
    expect(await ids()).toEqual([second.id, first.id]);
    expect(await ids('--org', org)).toEqual([second.id, first.id]);
    expect(await ids('--status', 'VOIDED')).toEqual([first.id]);
    expect(await ids('--status', 'ACTIVE')).toEqual([second.id]);
    expect(await ids('--limit', '1', '--offset', '1')).toEqual([first.id]);

    const other = String((await ok('org', 'create', '--name', 'Not Granted Co')).id);
    const elsewhere = await run('credit', 'list', '--customer', customer, '--org', other);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toMatch(/^error \(NOT_FOUND\): Customer \d+ not found/);
  });

  it('credit-note list pages with --limit and --offset; a note credited to the customer moves their credit alerts', async () => {
    const { org, subscription } = await subscribedCustomer('Noted Co');
    const invoice = await mayInvoice(org);
    const alert = await ok(
      ...['alert', 'create', '--subscription', String(subscription.id), '--metric', 'credit_balance'],
      ...['--threshold', '0'],
    );
    const alertOf = async () => {
      const { data } = await ok('alert', 'list', '--org', org);
      const { status, value } = data.find((a: { id: string }) => a.id === alert.id);
      return { status, value };
    };
    // projected: the credit left once June's invoice (100 + 5 % GST) is paid from it
    expect(await alertOf()).toEqual({ status: 'TRIGGERED', value: '-105.00000000' });
    await ok('payment', 'record', '--invoice', invoice, '--amount', '105');
    const shown = await ok('invoice', 'show', '--id', invoice);
    const line = shown.items[0].id;
    const note = async (amount: string) =>
      ok(
        ...['credit-note', 'create', '--invoice', invoice, '--reason', 'other'],
        ...['--lines', JSON.stringify([{ invoice_item_id: line, amount }])],
      );
    // the invoice is paid: each note (with its 5 % GST) is credited to the customer
    expect(await note('1.00')).toMatchObject({ credited_to_customer: '1.05000000' });
    expect(await alertOf()).toEqual({ status: 'TRIGGERED', value: '-103.95000000' });
    expect(await note('99.00')).toMatchObject({ credited_to_customer: '103.95000000' });
    expect(await alertOf()).toEqual({ status: 'OK', value: '0.00000000' });

    const numbers = async (...flags: string[]) =>
      (await ok('credit-note', 'list', '--invoice', invoice, ...flags)).data.map(
        (n: { number: string }) => n.number,
      );
    expect(await numbers()).toEqual(['CN-000002', 'CN-000001']);
    expect(await numbers('--limit', '1')).toEqual(['CN-000002']);
    expect(await numbers('--limit', '1', '--offset', '1')).toEqual(['CN-000001']);
    expect(await numbers('--org', org)).toEqual(['CN-000002', 'CN-000001']);
  });

  it('subscription create in an unknown organization says the organization is not found', async () => {
    const result = await run(
      ...['subscription', 'create', '--org', '999999', '--customer', '1'],
      ...['--items', '[{"product_id":1}]'],
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error \(NOT_FOUND\): Organization 999999 not found/);
  });

  it('subscription cancel --without-invoicing ends the subscription at --now', async () => {
    const { subscription } = await subscribedCustomer('Leaving Co');
    const canceled = await ok(
      ...['subscription', 'cancel', '--id', String(subscription.id), '--without-invoicing'],
      ...['--now', '2026-05-10T00:00:00Z'],
    );
    expect(canceled).toMatchObject({
      status: 'canceled',
      canceled_at: '2026-05-10T00:00:00.000Z',
      ended_at: '2026-05-10T00:00:00.000Z',
    });
  });
});
