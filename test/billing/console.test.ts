import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setCreditTopUp } from '../../libs/billing/index.js';
import { inProcessConsole } from '../helpers/console.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runTs } from '../helpers/processes.js';
import { outbox, recordUsage } from './fixtures.js';

/**
 * The console drives a subscription from creation through trial, billing, payment and
 * cancellation (issue 5 "done when"), each step printed as JSON, every failure an exit code and a
 * message on stderr.
 */

let database: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createTestDatabase('billing_console');
  env = {
    DATABASE_URL: database.url,
    LOG_LEVEL: 'silent',
    PORT: '8080',
    HOST: '127.0.0.1',
    CLICKHOUSE_URL: '',
  };
});
afterAll(() => database.drop());

const run = inProcessConsole(() => env);

/** Runs a command that must succeed and returns its JSON. */
async function ok(...argv: string[]) {
  const result = await run(...argv);
  expect(result.stderr.replace(/^billing run:.*\n/gm, ''), argv.join(' ')).toBe('');
  expect(result.code, result.stderr).toBe(0);
  return result.json();
}

/** argv of `product create` in `orgId`, further flags appended. */
function productArgs(
  orgId: number | string,
  name: string,
  unitPrice: string,
  pricingType: string,
  ...more: string[]
): string[] {
  const flags = [
    '--org',
    String(orgId),
    '--name',
    name,
    '--unit-price',
    unitPrice,
    '--pricing-type',
    pricingType,
  ];
  return ['product', 'create', ...flags, ...more];
}

/** argv of `subscription create` in `orgId`; `items` is the flag's JSON. */
function subscriptionArgs(
  orgId: number,
  customerId: number | string,
  items: string,
  ...more: string[]
): string[] {
  return [
    'subscription',
    'create',
    '--org',
    String(orgId),
    '--customer',
    String(customerId),
    '--items',
    items,
    ...more,
  ];
}

/** argv of `payment record`, further flags appended. */
function paymentArgs(invoiceId: string, amount: string, ...more: string[]): string[] {
  return ['payment', 'record', '--invoice', invoiceId, '--amount', amount, ...more];
}

describe('billing console, end to end', () => {
  let org: number;
  const createProduct = (name: string, unitPrice: string, pricingType: string, ...more: string[]) =>
    ok(...productArgs(org, name, unitPrice, pricingType, ...more));
  const createCustomer = (name: string, ...more: string[]) =>
    ok('customer', 'create', '--org', String(org), '--name', name, ...more);
  const subscribe = (customerId: number, items: unknown[], ...more: string[]) =>
    ok(...subscriptionArgs(org, customerId, JSON.stringify(items), ...more));

  beforeAll(async () => {
    org = (await ok('org', 'create', '--name', 'Console Billing Co')).id;
  });

  it("credit grant, list and void; alert create, list and delete: the API's functions, printed as JSON", async () => {
    const calls = await createProduct('Console calls', '1', 'usage');
    const customer = await createCustomer('Alerted Inc.', '--country', 'CA', '--state-province', 'ON');
    const subscription = await subscribe(
      customer.id,
      [{ product_id: calls.id }],
      '--start',
      new Date().toISOString(),
    );
    const item = subscription.items[0].id as number;

    const grant = await ok(
      'credit',
      'grant',
      '--customer',
      String(customer.id),
      '--amount',
      '25',
      '--category',
      'promotional',
      '--priority',
      '10',
      ...['--applies-to', 'usage', '--effective-at', '2026-01-01T00:00:00Z'],
      ...['--expires-at', '2099-01-01T00:00:00Z', '--name', 'Welcome credits'],
    );
    expect(grant).toMatchObject({
      object: 'credit_grant',
      status: 'ACTIVE',
      amount: '25.00000000',
      priority: 10,
      name: 'Welcome credits',
      applies_to: 'usage',
      effective_at: '2026-01-01T00:00:00.000Z',
      expires_at: '2099-01-01T00:00:00.000Z',
    });
    const refused = await run(
      'credit',
      'grant',
      '--customer',
      String(customer.id),
      '--amount',
      '25',
      '--category',
      'gift',
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--category/);
    const listed = await ok('credit', 'list', '--customer', String(customer.id));
    expect(listed.data.map((g: { id: string }) => g.id)).toEqual([grant.id]);
    expect(await ok('credit', 'void', '--id', grant.id)).toMatchObject({ id: grant.id, status: 'VOIDED' });

    const alert = await ok(
      'alert',
      'create',
      '--subscription',
      String(subscription.id),
      '--metric',
      'usage_quantity',
      '--item',
      String(item),
      '--threshold',
      '10',
      '--name',
      'ten calls',
    );
    expect(alert).toMatchObject({ object: 'alert', status: 'OK', value: '0.00000000', name: 'ten calls' });
    const missingItem = await run(
      'alert',
      'create',
      '--subscription',
      String(subscription.id),
      '--metric',
      'usage_quantity',
      '--threshold',
      '10',
    );
    expect(missingItem.code).not.toBe(0);
    expect(missingItem.stderr).toMatch(/--item/);
    expect(
      (await ok('alert', 'list', '--org', String(org), '--subscription', String(subscription.id))).data,
    ).toEqual([alert]);
    expect(await ok('alert', 'delete', '--id', alert.id, '--org', String(org))).toEqual({
      id: alert.id,
      deleted: true,
    });
    expect((await run('alert', 'delete', '--id', alert.id, '--org', String(org))).code).not.toBe(0);
  });

  it('alert list keeps to --subscription, --customer, --status and the page asked for', async () => {
    const own = String((await ok('org', 'create', '--name', 'Alert Filters Co')).id);
    const plan = await ok(...productArgs(own, 'Plan', '10', 'recurring'));
    const alerted = [];
    for (const name of ['First', 'Second']) {
      const customer = await ok('customer', 'create', '--org', own, '--name', name, '--state-province', 'ON');
      const items = JSON.stringify([{ product_id: plan.id }]);
      const subscription = await ok(...subscriptionArgs(Number(own), customer.id, items));
      const alert = await ok(
        ...['alert', 'create', '--subscription', String(subscription.id), '--metric', 'usage_amount'],
        ...['--threshold', '1000'],
      );
      alerted.push({ customer: String(customer.id), subscription: String(subscription.id), alert });
    }
    const [first, second] = alerted as [(typeof alerted)[0], (typeof alerted)[0]];
    const list = async (...flags: string[]) =>
      (await ok('alert', 'list', '--org', own, ...flags)).data.map((a: { id: string }) => a.id);
    expect(await list()).toEqual([second.alert.id, first.alert.id]);
    expect(await list('--subscription', first.subscription)).toEqual([first.alert.id]);
    expect(await list('--customer', second.customer)).toEqual([second.alert.id]);
    expect(await list('--customer', second.customer, '--subscription', first.subscription)).toEqual([]);
    expect(await list('--status', 'TRIGGERED')).toEqual([]);
    expect(await list('--status', 'OK', '--limit', '1', '--offset', '1')).toEqual([first.alert.id]);
  });

  it("credit grant and void move the customer's credit_balance alerts at once", async () => {
    const own = String((await ok('org', 'create', '--name', 'Credit Alerts Co')).id);
    const plan = await ok(...productArgs(own, 'Plan', '10', 'recurring'));
    const customer = await ok('customer', 'create', '--org', own, '--name', 'Low', '--state-province', 'ON');
    const items = JSON.stringify([{ product_id: plan.id }]);
    const subscription = await ok(...subscriptionArgs(Number(own), customer.id, items));
    const alert = await ok(
      ...['alert', 'create', '--subscription', String(subscription.id), '--metric', 'credit_balance'],
      ...['--threshold', '10'],
    );
    const status = async () => {
      const [listed] = (await ok('alert', 'list', '--org', own)).data;
      expect(listed.id).toBe(alert.id);
      return { status: listed.status, value: listed.value };
    };
    // projected: the credit left once the running period's invoice (10 + 13 % HST) is paid from it
    expect(await status()).toEqual({ status: 'TRIGGERED', value: '-11.30000000' });
    const grant = await ok(
      ...['credit', 'grant', '--customer', String(customer.id), '--amount', '25'],
      ...['--category', 'promotional'],
    );
    expect(await status()).toEqual({ status: 'OK', value: '13.70000000' });
    await ok('credit', 'void', '--id', grant.id);
    expect(await status()).toEqual({ status: 'TRIGGERED', value: '-11.30000000' });
  });

  it('product, customer, subscription with a trial, billing, payment, cancellation', async () => {
    const earlierEvents = (await outbox(database.db, org)).length; // the tests before share the org
    const seats = await createProduct('Seats', '25', 'recurring', '--sku', 'SEAT', '--unit-label', 'seat');
    expect(seats).toMatchObject({
      object: 'product',
      id: expect.any(Number),
      unit_price: '25.00000000',
      pricing_scheme: 'linear',
      tiers: [],
    });
    const calls = await createProduct(
      'API calls',
      '0',
      'usage',
      '--pricing-mode',
      'graduated',
      '--tiers',
      '[{"up_to":"100","unit_price":"1.00"},{"up_to":null,"unit_price":"0.50"}]',
    );
    expect(calls).toMatchObject({ pricing_scheme: 'tiered', pricing_mode: 'graduated', category: 'usage' });
    expect(calls.tiers).toHaveLength(2);

    const customer = await createCustomer(
      'Québec Ltée',
      '--email',
      'ap@quebec.example',
      '--country',
      'CA',
      '--state-province',
      'QC',
      '--notes',
      'never shown',
    );
    expect(customer).toMatchObject({ object: 'customer', name: 'Québec Ltée', credit_balance: '0.00000000' });
    expect(customer.notes).toBeUndefined();

    const subscription = await subscribe(
      customer.id,
      [
        { product_id: seats.id, quantity: 2 },
        { product_id: calls.id, included_units: '100' },
      ],
      '--trial-days',
      '14',
      '--start',
      '2026-01-01T00:00:00Z',
    );
    expect(subscription).toMatchObject({
      object: 'subscription',
      status: 'trialing',
      trial_end_date: '2026-01-15T00:00:00.000Z',
      next_billing_date: '2026-01-15T00:00:00.000Z',
    });
    expect(subscription.items.map((i: { usage_type: string }) => i.usage_type)).toEqual([
      'licensed',
      'metered',
    ]);
    const metered = subscription.items[1].id;
    await recordUsage(database.db, org, metered, '150', '2026-01-10T00:00:00Z'); // during the trial: not billed
    await recordUsage(database.db, org, metered, '300', '2026-02-01T00:00:00Z'); // 300 - 100 included = 200

    const trialEnd = await ok('billing', 'run', '--now', '2026-01-16', '--org', String(org));
    expect(trialEnd).toMatchObject({ invoices_created: 0, trials_ended: 1, invoice_ids: [] });

    const billed = await ok('billing', 'run', '--now', '2026-02-15T00:00:00Z', '--org', String(org));
    expect(billed).toMatchObject({ invoices_created: 1, posted: true, failures: [] });
    const invoiceId = billed.invoice_ids[0];
    const { rows } = await database.db.query('SELECT total, status, tax_amount FROM invoices WHERE id = $1', [
      invoiceId,
    ]);
    // 2 x 25 + (100 x 1.00 + 100 x 0.50) = 200.00; QC GST 5 % + QST 9.975 % = 29.95
    expect(rows[0]).toEqual({ total: '229.95000000', status: 'POSTED', tax_amount: '29.95000000' });

    const part = await ok(...paymentArgs(invoiceId, '100', '--method', 'CARD', '--reference', 'ch_42'));
    expect(part).toMatchObject({
      object: 'invoice_transaction',
      type: 'PAYMENT',
      amount: '100.00000000',
      method: 'CARD',
      reference: 'ch_42',
      invoice: { id: invoiceId, status: 'PARTIALLY_PAID', balance: '129.95000000' },
    });
    const memo = await ok(
      'credit-memo',
      'create',
      '--invoice',
      invoiceId,
      '--amount',
      '9.95',
      '--note',
      'Goodwill',
    );
    expect(memo).toMatchObject({
      type: 'CREDIT_MEMO',
      invoice: { status: 'PARTIALLY_PAID', balance: '120.00000000' },
    });
    const rest = await ok(...paymentArgs(invoiceId, '120', '--method', 'BANK_TRANSFER'));
    expect(rest.invoice).toMatchObject({
      status: 'PAID',
      balance: '0.00000000',
      amount_paid: '229.95000000',
    });
    const refund = await ok('refund', 'create', '--invoice', invoiceId, '--amount', '20');
    expect(refund).toMatchObject({
      type: 'REFUND',
      invoice: { status: 'PARTIALLY_REFUNDED', amount_refunded: '20.00000000' },
    });

    const canceling = await ok(
      'subscription',
      'cancel',
      '--id',
      String(subscription.id),
      '--at-period-end',
      '--now',
      '2026-02-20',
    );
    expect(canceling).toMatchObject({ status: 'active', cancel_at_period_end: true });
    const last = await ok('billing', 'run', '--now', '2026-03-16', '--org', String(org));
    expect(last).toMatchObject({ invoices_created: 1, canceled: 1 });

    const types = (await outbox(database.db, org)).slice(earlierEvents).map((e) => e.event_type);
    expect(types).toEqual([
      'subscription.created',
      'invoice.posted',
      'payment.succeeded',
      'payment.succeeded',
      'invoice.paid',
      'invoice.posted',
      'subscription.canceled',
    ]);
  });

  it('draft invoices: billing run --draft, then invoice post / withdraw', async () => {
    const product = await createProduct('Plan', '10', 'recurring');
    const customer = await createCustomer('Drafty', '--country', 'US', '--state-province', 'OR');
    for (let i = 0; i < 2; i++) {
      await subscribe(customer.id, [{ product_id: product.id }], '--start', '2026-05-01');
    }
    const drafts = await ok('billing', 'run', '--now', '2026-06-01', '--org', String(org), '--draft');
    expect(drafts).toMatchObject({ posted: false, invoices_created: 2 });
    const [first, second] = drafts.invoice_ids;
    const posted = await ok('invoice', 'post', '--id', first);
    expect(posted).toMatchObject({
      object: 'invoice',
      id: first,
      status: 'POSTED',
      total: '10.00000000',
      tax_amount: '0.00000000',
    });
    expect(posted.items[0]).toMatchObject({ tax_type: 'US_SALES_TAX' });
    const withdrawn = await ok('invoice', 'withdraw', '--id', second, '--org', String(org));
    expect(withdrawn.status).toBe('WITHDRAWN');
  });

  it('billing run checks the automatic top-up of each customer whose invoice it posted', async () => {
    const product = await createProduct('Topped plan', '10', 'recurring');
    const customer = await createCustomer('Topped', '--country', 'US', '--state-province', 'OR');
    await subscribe(customer.id, [{ product_id: product.id }], '--start', '2026-05-01');
    await setCreditTopUp(database.db, org, customer.id, {
      enabled: true,
      threshold: '1.00',
      target: '50.00',
    });
    const paidGrants = async () =>
      (await ok('credit', 'list', '--customer', String(customer.id))).data.filter(
        (grant: { category: string }) => grant.category === 'paid',
      );
    expect(await paidGrants()).toEqual([]);
    // the posted 10.00 takes projected to -10.00, below the threshold: one paid grant of 50 - (-10)
    await ok('billing', 'run', '--now', '2026-06-01', '--org', String(org));
    expect((await paidGrants()).map((grant: { amount: string }) => grant.amount)).toEqual(['60.00000000']);
  });

  it('termed subscriptions from flags: period, term, auto-renew', async () => {
    const product = await createProduct('Term plan', '30', 'recurring', '--billing-period', 'quarterly');
    const customer = await createCustomer('Termed', '--state-province', 'ON');
    const base = subscriptionArgs(org, customer.id, JSON.stringify([{ product_id: product.id }]));
    const termed = await ok(
      ...base,
      '--billing-period',
      'quarterly',
      '--term-type',
      'termed',
      '--initial-term-months',
      '6',
      '--auto-renew',
      'false',
      '--start',
      '2026-01-31',
      '--title',
      'Two quarters',
    );
    expect(termed).toMatchObject({
      title: 'Two quarters',
      billing_period: 'quarterly',
      term_type: 'termed',
      initial_term_months: 6,
      auto_renew: false,
      current_period_end: '2026-04-30T00:00:00.000Z',
      subscription_end_date: '2026-07-31T00:00:00.000Z',
    });
    expect(
      (await ok(...base, '--term-type', 'termed', '--initial-term-months', '12', '--auto-renew')).auto_renew,
    ).toBe(true);
    expect(await ok(...base)).toMatchObject({ auto_renew: true, billing_period: 'quarterly' });
    const odd = await run(...base, '--term-type', 'termed', '--initial-term-months', '4');
    expect(odd.code).toBe(1);
    expect(odd.stderr).toMatch(
      /VALIDATION_ERROR[\s\S]*--initial-term-months: Must be a whole number of quarterly periods/,
    );
    const otherPeriod = await run(...base, '--billing-period', 'annually');
    expect(otherPeriod.code).toBe(1);
    expect(otherPeriod.stderr).toMatch(
      /items\.0\.product_id: Product \d+ is priced quarterly; this subscription is billed annually/,
    );
  });

  it('canceling invoices the periods that already ended first, then cancels', async () => {
    const product = await createProduct('Monthly plan', '100', 'recurring');
    const customer = await createCustomer('Leaving', '--state-province', 'AB');
    const subscription = await subscribe(customer.id, [{ product_id: product.id }], '--start', '2026-05-01');
    // the May period ended on June 1; no billing run has happened since
    const canceled = await ok(
      'subscription',
      'cancel',
      '--id',
      String(subscription.id),
      '--now',
      '2026-06-10',
    );
    expect(canceled).toMatchObject({ status: 'canceled' });
    const { rows } = await database.db.query<{ id: string; period_start: string; total: string }>(
      `SELECT id, to_char(period_start, 'YYYY-MM-DD') AS period_start, total FROM invoices
        WHERE subscription_id = $1 ORDER BY period_start`,
      [subscription.id],
    );
    // May: 100 + 5 % GST (AB); June until the cancel: 9 of 30 days = 30.00 + GST 1.50
    expect(rows.map(({ id: _id, ...row }) => row)).toEqual([
      { period_start: '2026-05-01', total: '105.00000000' },
      { period_start: '2026-06-01', total: '31.50000000' },
    ]);
    expect(canceled.final_invoice_id).toBe(rows[1]!.id);

    // at period end, after an unbilled period: the period meant is the one running now
    const other = await subscribe(customer.id, [{ product_id: product.id }], '--start', '2026-05-01');
    const later = await ok(
      'subscription',
      'cancel',
      '--id',
      String(other.id),
      '--at-period-end',
      '--now',
      '2026-06-10',
    );
    expect(later).toMatchObject({ status: 'active', cancel_at_period_end: true });
    expect(later.current_period_end).toBe('2026-07-01T00:00:00.000Z');
  });

  it('refuses at the door what could never be invoiced; parks what still cannot be, and gives a way out', async () => {
    const huge = await createProduct('Whale plan', '800000000000', 'recurring');
    const customer = await createCustomer('Whale', '--state-province', 'AB');
    // a quantity whose charge no invoice can hold is refused when the subscription is made
    const refused = await run(
      ...subscriptionArgs(org, customer.id, JSON.stringify([{ product_id: huge.id, quantity: 2 }])),
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/items\.0\.quantity/);
    expect(refused.stderr).toMatch(/more than an invoice can hold/);

    // usage is not known in advance: a period whose usage cannot be invoiced is parked
    const pricey = await createProduct('Pricey calls', '100000000000', 'usage');
    const whale = await subscribe(customer.id, [{ product_id: pricey.id }], '--start', '2026-05-01');
    const whaleItem = whale.items[0].id as number;
    await recordUsage(database.db, org, whaleItem, '50', '2026-05-10T00:00:00Z');
    const product = await createProduct('Monthly basic', '10', 'recurring');
    const running = await subscribe(customer.id, [{ product_id: product.id }], '--start', '2026-05-01');
    await ok('subscription', 'cancel', '--id', String(running.id), '--at-period-end', '--now', '2026-05-20');
    const other = await subscribe(customer.id, [{ product_id: product.id }], '--start', '2026-05-01');
    const parkedReason = /exceeds the largest amount stored \(999999999999\.99999999\)/;
    for (const now of ['2026-06-02', '2026-06-03']) {
      // exit 0: everyone else is billed, the whale is listed on every run, and never retried
      const billed = await run('billing', 'run', '--now', now, '--org', String(org));
      expect(billed.code, billed.stderr).toBe(0);
      expect(billed.json().failures).toEqual([]);
      expect(billed.json().parked).toEqual([
        {
          subscription_id: whale.id,
          parked_at: expect.any(String),
          reason: expect.stringMatching(parkedReason),
        },
      ]);
    }
    const { rows: billedOthers } = await database.db.query(
      'SELECT subscription_id FROM invoices WHERE subscription_id = ANY($1::bigint[])',
      [[other.id, whale.id]],
    );
    expect(billedOthers).toEqual([{ subscription_id: other.id }]);

    // canceling bills the ended period first, which cannot be done: nothing is canceled...
    const unbillable = await run('subscription', 'cancel', '--id', String(whale.id), '--now', '2026-06-10');
    expect(unbillable.code).toBe(1);
    expect(unbillable.stderr).toMatch(
      /is parked: .*could not be invoiced \(.*exceeds the largest amount stored/,
    );
    expect(unbillable.stderr).not.toMatch(/numeric field overflow/);
    // ...unless the operator says so: recorded on the subscription, and emitted
    const gone = await ok(
      'subscription',
      'cancel',
      '--id',
      String(whale.id),
      '--without-invoicing',
      '--now',
      '2026-06-10',
    );
    expect(gone).toMatchObject({ id: whale.id, status: 'canceled' });
    const { rows: recorded } = await database.db.query(
      'SELECT canceled_without_invoicing FROM subscriptions WHERE id = $1',
      [whale.id],
    );
    expect(recorded).toEqual([{ canceled_without_invoicing: true }]);
    expect((await outbox(database.db, org, 'subscription.canceled')).map((e) => e.data.id)).toContain(
      whale.id,
    );
    const after = await run('billing', 'run', '--now', '2026-06-04', '--org', String(org));
    expect(after.json().parked).toEqual([]);

    // or the cause is fixed (the usage corrected) and the subscription unparked: billed again
    const second = await subscribe(customer.id, [{ product_id: pricey.id }], '--start', '2026-05-01');
    await recordUsage(database.db, org, second.items[0].id, '50', '2026-05-10T00:00:00Z');
    expect(
      (await run('billing', 'run', '--now', '2026-06-05', '--org', String(org))).json().parked,
    ).toHaveLength(1);
    await database.db.query('UPDATE usage_events SET quantity = 1 WHERE subscription_item_id = $1', [
      second.items[0].id,
    ]);
    await ok('subscription', 'unpark', '--id', String(second.id));
    const rebilled = await ok('billing', 'run', '--now', '2026-06-05', '--org', String(org));
    expect(rebilled.parked).toEqual([]);
    expect(rebilled.invoices_created).toBe(1);
    const notParked = await run('subscription', 'unpark', '--id', String(second.id));
    expect(notParked.code).toBe(1);
    expect(notParked.stderr).toMatch(/is not parked/);

    const backdated = await run('subscription', 'cancel', '--id', String(other.id), '--now', '2026-05-15');
    expect(backdated.code).toBe(1);
    expect(backdated.stderr).toMatch(
      /cannot end at 2026-05-15T00:00:00.000Z, before its current period began/,
    );
  });

  it('cancel: --without-invoicing and --proration go with a cancel now only; --proration none bills it all', async () => {
    const product = await createProduct('Prorated plan', '100', 'recurring');
    const customer = await createCustomer('Options', '--state-province', 'AB');
    const subscription = await subscribe(customer.id, [{ product_id: product.id }], '--start', '2026-05-01');
    const id = String(subscription.id);
    const cancel = (...flags: string[]) =>
      run('subscription', 'cancel', '--id', id, '--now', '2026-05-10', ...flags);
    const cases: [string[], string][] = [
      [
        ['--at-period-end', '--without-invoicing'],
        '--without-invoicing: A subscription canceled without invoicing ends now',
      ],
      [['--at-period-end', '--proration', 'none'], '--proration: Only a cancel now has a final invoice'],
    ];
    for (const [flags, message] of cases) {
      const refused = await cancel(...flags);
      expect(refused.code, flags.join(' ')).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(message);
    }
    const { rows: untouched } = await database.db.query(
      'SELECT status, cancel_at_period_end FROM subscriptions WHERE id = $1',
      [subscription.id],
    );
    expect(untouched).toEqual([{ status: 'active', cancel_at_period_end: false }]);

    // without proration the licensed item is billed for the whole period: 100 + 5 % GST (AB)
    const canceled = await cancel('--proration', 'none');
    expect(canceled.code, canceled.stderr).toBe(0);
    expect(canceled.json()).toMatchObject({ status: 'canceled' });
    const { rows } = await database.db.query('SELECT total FROM invoices WHERE id = $1', [
      canceled.json().final_invoice_id,
    ]);
    expect(rows).toEqual([{ total: '105.00000000' }]);
  });

  it('a repeated --reference records nothing new: refund create, credit grant, customer add-credit', async () => {
    const product = await createProduct('Refunded plan', '10', 'recurring');
    const customer = await createCustomer('Refunded', '--state-province', 'AB');
    await subscribe(customer.id, [{ product_id: product.id }], '--start', '2026-03-01');
    await ok('billing', 'run', '--now', '2026-04-01', '--org', String(org));
    const { rows } = await database.db.query('SELECT id FROM invoices WHERE customer_id = $1', [customer.id]);
    expect(rows).toHaveLength(1);
    const invoice = rows[0]!.id as string;
    await ok(...paymentArgs(invoice, '10.50', '--reference', 'ch_refunded'));
    const refunds = [];
    for (let i = 0; i < 2; i++) {
      refunds.push(
        await ok('refund', 'create', '--invoice', invoice, '--amount', '4', '--reference', 're_1'),
      );
    }
    expect(refunds[1].id).toBe(refunds[0].id);
    expect(refunds[1].invoice).toMatchObject({ amount_refunded: '4.00000000' });

    const grant = ['credit', 'grant', '--customer', String(customer.id), '--amount', '5'];
    const grants = [];
    for (let i = 0; i < 2; i++) {
      grants.push(await ok(...grant, '--category', 'promotional', '--reference', 'promo-1'));
    }
    expect(grants[1].id).toBe(grants[0].id);
    const listed = await ok('credit', 'list', '--customer', String(customer.id));
    expect(listed.data.map((g: { id: string }) => g.id)).toEqual([grants[0].id]);

    const addCredit = ['customer', 'add-credit', '--id', String(customer.id), '--amount', '7'];
    await ok(...addCredit, '--reference', 'goodwill-1');
    const again = await ok(...addCredit, '--reference', 'goodwill-1');
    // the 5.00 grant and one 7.00: the second run with the same reference added nothing
    expect(again.credit_balance).toBe('12.00000000');
  });

  it('subscription update previews the change asked for: --effective period_end, --proration none', async () => {
    const product = await createProduct('Changed plan', '30', 'recurring');
    const customer = await createCustomer('Changing', '--state-province', 'AB');
    const subscription = await subscribe(customer.id, [{ product_id: product.id, quantity: 1 }]);
    const preview = async (...flags: string[]) =>
      ok(
        ...['subscription', 'update', '--id', String(subscription.id), '--preview'],
        ...['--items', JSON.stringify([{ id: subscription.items[0].id, quantity: 3 }]), ...flags],
      );
    const now = await preview();
    expect(now.proration_lines).toHaveLength(2);
    expect(now.effective_at).not.toBe(subscription.current_period_end);
    const atEnd = await preview('--effective', 'period_end');
    expect(atEnd.effective_at).toBe(subscription.current_period_end);
    expect(atEnd.proration_lines).toEqual([]);
    expect((await preview('--proration', 'none')).proration_lines).toEqual([]);
    // as of --now: from the period's very first instant, the whole period is prorated
    const asOfStart = await preview('--now', subscription.current_period_start);
    expect(asOfStart.effective_at).toBe(subscription.current_period_start);
    // a preview changes nothing
    const shown = await ok('subscription', 'show', '--id', String(subscription.id));
    expect(shown.items.map((item: { quantity: number }) => item.quantity)).toEqual([1]);
    expect(shown.pending_change).toBeNull();
  });

  it("with another organization's --org, every command that changes a record finds nothing (exit 1)", async () => {
    const own = String((await ok('org', 'create', '--name', 'Scoped Co')).id);
    const other = String((await ok('org', 'create', '--name', 'Other Co')).id);
    const product = await ok(...productArgs(own, 'Scoped plan', '10', 'recurring'));
    const customer = await ok(
      'customer',
      'create',
      '--org',
      own,
      '--name',
      'Scoped',
      '--state-province',
      'AB',
    );
    const items = JSON.stringify([{ product_id: product.id }]);
    const subscription = await ok(
      ...subscriptionArgs(Number(own), customer.id, items, '--start', '2026-03-01'),
    );
    await ok(...subscriptionArgs(Number(own), customer.id, items, '--start', '2026-03-01'));
    const [posted, draft] = (await ok('billing', 'run', '--now', '2026-04-01', '--org', own, '--draft'))
      .invoice_ids as [string, string];
    await ok('invoice', 'post', '--id', posted);
    await ok(...paymentArgs(posted, '5'));
    const grant = await ok(
      ...['credit', 'grant', '--customer', String(customer.id), '--amount', '5', '--category', 'promotional'],
    );
    const { rows: lines } = await database.db.query('SELECT id FROM invoice_items WHERE invoice_id = $1', [
      posted,
    ]);
    const state = async () => ({
      credit: (await ok('customer', 'show', '--id', String(customer.id))).credit_balance,
      ...(
        await database.db.query(
          `SELECT (SELECT json_agg(json_build_object('status', status, 'paid', amount_paid, 'refunded', amount_refunded,
                          'total', total) ORDER BY id) FROM invoices WHERE id = ANY($1::uuid[])) AS invoices,
                  (SELECT status FROM subscriptions WHERE id = $2) AS subscription,
                  (SELECT status FROM credit_grants WHERE id = $3) AS grant,
                  (SELECT count(*)::int FROM credit_grants WHERE customer_id = $4) AS grants,
                  (SELECT count(*)::int FROM credit_notes WHERE invoice_id = $5) AS notes`,
          [[posted, draft], subscription.id, grant.id, customer.id, posted],
        )
      ).rows[0],
    });
    const before = await state();
    const id = String(subscription.id);
    const cases: string[][] = [
      ['subscription', 'cancel', '--id', id, '--now', '2026-04-10'],
      ['subscription', 'cancel', '--id', id, '--now', '2026-04-10', '--without-invoicing'],
      [
        'subscription',
        'update',
        '--id',
        id,
        '--items',
        JSON.stringify([{ id: subscription.items[0].id, quantity: 2 }]),
      ],
      ['subscription', 'unpark', '--id', id],
      ['invoice', 'post', '--id', draft],
      ['invoice', 'withdraw', '--id', draft],
      paymentArgs(posted, '1'),
      ['credit-memo', 'create', '--invoice', posted, '--amount', '1'],
      ['refund', 'create', '--invoice', posted, '--amount', '1'],
      [
        ...['credit-note', 'create', '--invoice', posted, '--reason', 'other'],
        ...['--lines', JSON.stringify([{ invoice_item_id: lines[0]!.id, amount: '1.00' }])],
      ],
      ['credit', 'grant', '--customer', String(customer.id), '--amount', '5', '--category', 'promotional'],
      ['credit', 'void', '--id', grant.id],
      ['customer', 'add-credit', '--id', String(customer.id), '--amount', '5'],
    ];
    for (const argv of cases) {
      const refused = await run(...argv, '--org', other);
      expect(refused.code, argv.join(' ')).toBe(1);
      expect(refused.stderr, argv.join(' ')).toMatch(/^error \(NOT_FOUND\)/);
    }
    expect(await state()).toEqual(before);
  });

  it('credit added to a customer is consumed by the next posted invoice', async () => {
    const product = await createProduct('Support', '40', 'recurring');
    const customer = await createCustomer('Prepaid', '--state-province', 'AB');
    const credited = await ok('customer', 'add-credit', '--id', String(customer.id), '--amount', '100');
    expect(credited.credit_balance).toBe('100.00000000');
    await subscribe(customer.id, [{ product_id: product.id }], '--start', '2026-07-01');
    await ok('billing', 'run', '--now', '2026-08-01', '--org', String(org));
    const { rows } = await database.db.query(
      'SELECT status, amount_paid FROM invoices WHERE customer_id = $1',
      [customer.id],
    );
    expect(rows[0]).toEqual({ status: 'PAID', amount_paid: '42.00000000' });
  });

  it('fails with exit 1 and a message for unknown organizations and records, and illegal moves', async () => {
    const cases: [string[], RegExp][] = [
      [productArgs('999999', 'X', '1', 'recurring'), /NOT_FOUND.*Organization 999999 not found/],
      [['customer', 'create', '--org', '999999', '--name', 'X'], /Organization 999999 not found/],
      [subscriptionArgs(org, '999999', '[{"product_id":1}]'), /Customer 999999 not found/],
      [['subscription', 'cancel', '--id', '999999'], /Subscription 999999 not found/],
      [['billing', 'run', '--org', '999999'], /Organization 999999 not found/],
      [
        ['invoice', 'post', '--id', '00000000-0000-4000-8000-000000000000'],
        /Invoice 00000000-0000-4000-8000-000000000000 not found/,
      ],
      [paymentArgs('00000000-0000-4000-8000-000000000000', '1'), /NOT_FOUND/],
      [['credit', 'list', '--customer', '999999'], /NOT_FOUND.*Customer 999999 not found/],
      [['entitlement', 'list', '--customer', '999999'], /NOT_FOUND.*Customer 999999 not found/],
      // without --org, the organization is the subscription's: none
      [
        ['alert', 'create', '--subscription', '999999', '--metric', 'usage_amount', '--threshold', '5'],
        /NOT_FOUND.*Subscription 999999 not found/,
      ],
    ];
    for (const [argv, message] of cases) {
      const result = await run(...argv);
      expect(result.code, argv.join(' ')).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(message);
    }
    const { rows } = await database.db.query(
      `SELECT id FROM invoices WHERE org_id = $1 AND status = 'PAID' LIMIT 1`,
      [org],
    );
    const illegal = await run('invoice', 'withdraw', '--id', rows[0]!.id);
    expect(illegal.code).toBe(1);
    expect(illegal.stderr).toMatch(/CONFLICT.*is PAID and cannot become WITHDRAWN/);
  });

  it('refuses bad flags with usage (exit 2)', async () => {
    const cases: [string[], RegExp][] = [
      [productArgs(org, 'X', 'ten', 'recurring'), /--unit-price/],
      [productArgs(org, 'X', '1', 'weekly'), /--pricing-type/],
      [subscriptionArgs(org, '1', 'not json'), /--items: must be valid JSON/],
      // judged on the flags alone, before any record is read
      [
        subscriptionArgs(org, '999999', '[{"product_id":999999}]', '--term-type', 'termed'),
        /--initial-term-months: A termed subscription needs an initial term in months\./,
      ],
      [
        subscriptionArgs(org, '999999', '[{"product_id":999999}]', '--initial-term-months', '12'),
        /--initial-term-months: Only a termed subscription has an initial term\./,
      ],
      [['billing', 'run', '--now', 'yesterday'], /--now/],
      // impossible dates are refused, not rolled over to the next day
      [['billing', 'run', '--now', '2026-09-31'], /--now: Must be an ISO 8601/],
      [['billing', 'run', '--now', '2026-02-29T00:00:00Z'], /--now: Must be an ISO 8601/],
      [['billing', 'run', '--now', '2026-03-01T24:00:00Z'], /--now: Must be an ISO 8601/],
      // a future instant would invoice periods that have not ended
      [
        ['billing', 'run', '--now', `${new Date().getUTCFullYear() + 1}-06-01`],
        /--now: Must not be in the future/,
      ],
      [['subscription', 'cancel', '--id', '1', '--now', '2999-01-01'], /--now: Must not be in the future/],
      // a clock a few minutes ahead is still now; ten minutes is not
      [
        ['billing', 'run', '--org', '999999', '--now', new Date(Date.now() + 10 * 60_000).toISOString()],
        /--now: Must not be in the future/,
      ],
      [subscriptionArgs(org, '1', '[{"product_id":1}]', '--trial-days', '731'), /--trial-days: /],
      [
        subscriptionArgs(org, '1', '[{"product_id":1}]', '--initial-term-months', '121'),
        /--initial-term-months: /,
      ],
      [
        subscriptionArgs(org, '1', '[{"product_id":1}]', '--initial-term-months', '0'),
        /--initial-term-months: /,
      ],
      [['billing', 'run', '--org', '999999', '--batch-size', '5001'], /--batch-size: /],
      [['billing', 'run', '--org', '999999', '--batch-size', '0'], /--batch-size: /],
      [paymentArgs('abc', '1'), /--invoice/],
      [paymentArgs('00000000-0000-4000-8000-000000000000', '1', '--method', 'CASH'), /--method/],
    ];
    for (const [argv, message] of cases) {
      const result = await run(...argv);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    // the bounds themselves are taken: the command then looks for the records
    for (const argv of [
      subscriptionArgs(org, '999999', '[{"product_id":1}]', '--trial-days', '730'),
      subscriptionArgs(
        org,
        '999999',
        '[{"product_id":1}]',
        '--term-type',
        'termed',
        '--initial-term-months',
        '120',
      ),
      ['billing', 'run', '--org', '999999', '--batch-size', '5000'],
      ['billing', 'run', '--org', '999999', '--batch-size', '1'],
    ]) {
      const taken = await run(...argv);
      expect(taken.code, argv.join(' ')).toBe(1);
      expect(taken.stderr, argv.join(' ')).toMatch(/NOT_FOUND/);
    }
    const aheadOfClock = new Date(Date.now() + 60_000).toISOString();
    const skewed = await run('billing', 'run', '--org', '999999', '--now', aheadOfClock);
    expect(skewed.code, skewed.stderr).toBe(1);
    expect(skewed.stderr).toMatch(/Organization 999999 not found/);
  });

  it('exits 2 for values the domain refuses on their own, 1 for values refused against stored records', async () => {
    const own = (await ok('org', 'create', '--name', 'Validated Co')).id as number;
    const customer = ['customer', 'create', '--org', String(own), '--name', 'X', '--state-province', 'ON'];
    const cases: [string[], RegExp][] = [
      [[...customer, '--email', 'not-an-email'], /invalid flags for 'customer create':\n {2}--email: /],
      [[...customer, '--country', 'Canada'], /invalid flags for 'customer create':\n {2}--country: /],
      [
        productArgs(own, 'X', '1', 'recurring', '--currency', 'xx'),
        /invalid flags for 'product create':\n {2}--currency: /,
      ],
      [subscriptionArgs(own, '1', '[]'), /invalid flags for 'subscription create':\n {2}--items: /],
      [
        [...subscriptionArgs(own, '1', '[{"product_id":1}]'), '--start', '2100-01-01T00:00:00Z'],
        /invalid flags for 'subscription create':\n {2}--start: Must be before 2100/,
      ],
      [
        ['credit-memo', 'create', '--invoice', '00000000-0000-4000-8000-000000000000', '--amount', '0'],
        /invalid flags for 'credit-memo create':\n {2}--amount: /,
      ],
    ];
    for (const [argv, message] of cases) {
      const result = await run(...argv);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(message);
    }

    const product = await ok(...productArgs(own, 'Seats', '10', 'recurring'));
    const payer = await ok(...customer);
    await ok(
      ...subscriptionArgs(own, payer.id, JSON.stringify([{ product_id: product.id }])),
      '--start',
      '2026-01-01',
    );
    await ok('billing', 'run', '--now', '2026-02-01T00:00:00Z', '--org', String(own));
    const { rows } = await database.db.query(
      `SELECT id FROM invoices WHERE org_id = $1 AND status = 'POSTED'`,
      [own],
    );
    const above = await run(...paymentArgs(rows[0]!.id, '1000000'));
    expect(above.code).toBe(1);
    expect(above.stderr).toMatch(/VALIDATION_ERROR.*exceeds the balance/);
  });

  it('billing run exits 3 when a subscription could not be billed, the failures listed on stdout', async () => {
    const own = (await ok('org', 'create', '--name', 'Partly Billed Co')).id as number;
    const product = await ok(...productArgs(own, 'Seats', '10', 'recurring'));
    const customer = await ok(
      'customer',
      'create',
      '--org',
      String(own),
      '--name',
      'Billed Twice',
      '--state-province',
      'ON',
    );
    const argv = subscriptionArgs(own, customer.id, JSON.stringify([{ product_id: product.id }]));
    const subscription = await ok(...argv, '--start', '2026-01-01T00:00:00Z');
    await ok('billing', 'run', '--now', '2026-02-01T00:00:00Z', '--org', String(own));
    // a corrupted row: its billed period made due again; the unique key refuses a second invoice
    await database.db.query(
      `UPDATE subscriptions SET current_period_start = '2026-01-01', current_period_end = '2026-02-01',
              next_billing_date = '2026-02-01' WHERE id = $1`,
      [subscription.id],
    );
    const result = await run('billing', 'run', '--now', '2026-02-01T00:00:00Z', '--org', String(own));
    expect(result.code).toBe(3);
    expect(result.json().failures).toEqual([
      { subscription_id: subscription.id, error: expect.stringMatching(/duplicate key/) },
    ]);
    expect(result.stderr).toMatch(/1 subscription\(s\) could not be billed/);
  });

  it('runs as its own process: the summary as JSON on stdout, progress on stderr', async () => {
    const result = await runTs(
      'bin/console.ts',
      ['billing', 'run', '--now', '2026-01-01', '--org', String(org)],
      env,
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      now: '2026-01-01T00:00:00.000Z',
      org_id: org,
      invoices_created: 0,
    });
    expect(result.stderr).toMatch(/billing run: 0 subscriptions processed, 0 invoices created/);
  });
});
