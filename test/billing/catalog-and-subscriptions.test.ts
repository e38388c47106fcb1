import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProduct } from '../../libs/catalog/index.js';
import { ApiError } from '../../libs/errors/index.js';
import {
  cancelSubscription,
  createSubscription,
  type NewSubscription,
} from '../../libs/subscriptions/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { basicCatalog, customerIn, outbox, productIn } from './fixtures.js';

let database: TestDatabase;
let orgId: number;
let customerId: number;
let catalog: { seats: number; apiCalls: number };

beforeAll(async () => {
  database = await createTestDatabase('subscriptions');
  ({ orgId } = await createTestOrg(database.db));
  catalog = await basicCatalog(database.db, orgId);
  customerId = await customerIn(database.db, orgId);
});
afterAll(() => database.drop());

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const now = new Date('2026-03-10T12:00:00Z');
const create = (input: NewSubscription) =>
  database.db.transaction((tx) => createSubscription(tx, orgId, input, { now }));

describe('products', () => {
  it('creates a tiered product with its tiers, in the public representation', async () => {
    const product = await createProduct(database.db, orgId, {
      name: 'Storage',
      pricing_type: 'usage',
      pricing_mode: 'volume',
      unit_label: 'GB',
      tiers: [
        { up_to: '100', unit_price: '0.10' },
        { up_to: null, unit_price: '0.05', flat_fee: '1' },
      ],
    });
    expect(product).toMatchObject({
      object: 'product',
      name: 'Storage',
      unit_price: '0.00000000',
      currency: 'CAD',
      category: 'usage',
      pricing_type: 'usage',
      pricing_model: 'per_unit',
      pricing_scheme: 'tiered',
      pricing_mode: 'volume',
      is_active: true,
      tiers: [
        { up_to: '100.00000000', unit_price: '0.10000000', flat_fee: '0.00000000' },
        { up_to: null, unit_price: '0.05000000', flat_fee: '1.00000000' },
      ],
    });
  });

  it('refuses inconsistent prices, naming the fields', async () => {
    const noMode = await failure(
      createProduct(database.db, orgId, {
        name: 'X',
        pricing_type: 'usage',
        tiers: [{ up_to: null, unit_price: '1' }],
      }),
    );
    expect(noMode.details).toEqual([expect.objectContaining({ field: 'pricing_mode' })]);
    const closed = await failure(
      createProduct(database.db, orgId, {
        name: 'X',
        pricing_type: 'usage',
        pricing_mode: 'graduated',
        tiers: [{ up_to: '10', unit_price: '1' }],
      }),
    );
    expect(closed.details).toEqual([expect.objectContaining({ field: 'tiers.0.up_to' })]);
    const linearWithMode = await failure(
      createProduct(database.db, orgId, {
        name: 'X',
        pricing_type: 'recurring',
        pricing_scheme: 'linear',
        pricing_mode: 'flat',
      }),
    );
    expect(linearWithMode.details?.[0]?.field).toBe('pricing_mode');
    const badPrice = await failure(
      createProduct(database.db, orgId, { name: 'X', pricing_type: 'recurring', unit_price: '-1' }),
    );
    expect(badPrice.details?.[0]?.field).toBe('unit_price');
    expect(
      (await failure(createProduct(database.db, 999_999, { name: 'X', pricing_type: 'recurring' }))).code,
    ).toBe('NOT_FOUND');
  });
});

describe('creating subscriptions', () => {
  it('licensed and metered items (metered when the product is usage-priced), emits subscription.created', async () => {
    const subscription = await create({
      customer_id: customerId,
      items: [
        { product_id: catalog.seats, quantity: 3 },
        { product_id: catalog.apiCalls, included_units: '1000' },
      ],
      start_date: new Date('2026-01-31T09:00:00Z'),
    });
    expect(subscription).toMatchObject({
      object: 'subscription',
      customer_id: customerId,
      status: 'active',
      title: 'Seats, API calls',
      billing_period: 'monthly',
      // periods run from midnight UTC, whatever the start's time of day
      start_date: '2026-01-31T00:00:00.000Z',
      current_period_start: '2026-01-31T00:00:00.000Z',
      current_period_end: '2026-02-28T00:00:00.000Z',
      next_billing_date: '2026-02-28T00:00:00.000Z',
      term_type: 'evergreen',
      initial_term_months: null,
      auto_renew: true,
      trial_end_date: null,
      cancel_at_period_end: false,
    });
    expect(
      subscription.items.map((i) => [
        i.product_name,
        i.usage_type,
        i.quantity,
        i.unit_price,
        i.included_units,
      ]),
    ).toEqual([
      ['Seats', 'licensed', 3, '10.00000000', '0.00000000'],
      ['API calls', 'metered', 1, '0.00000000', '1000.00000000'],
    ]);
    const created = (await outbox(database.db, orgId, 'subscription.created')).at(-1);
    expect(created?.data).toEqual({
      id: subscription.id,
      object: 'subscription',
      customer_id: customerId,
      status: 'active',
    });
  });

  it('trials, quarterly and annual periods, termed subscriptions and future starts', async () => {
    const quarterlySeats = await productIn(database.db, orgId, {
      name: 'Seats (quarterly)',
      unit_price: '30.00',
      pricing_type: 'recurring',
      default_billing_period: 'quarterly',
    });
    const annualSeats = await productIn(database.db, orgId, {
      name: 'Seats (annual)',
      unit_price: '120.00',
      pricing_type: 'recurring',
      default_billing_period: 'annually',
    });
    const trial = await create({
      customer_id: customerId,
      items: [{ product_id: catalog.seats }],
      trial_days: 30,
    });
    expect(trial).toMatchObject({
      status: 'trialing',
      trial_end_date: '2026-04-09T00:00:00.000Z',
      next_billing_date: '2026-04-09T00:00:00.000Z',
    });
    // the trial is the first period: it ends when the trial does, not a billing period after the start
    const shortTrial = await create({
      customer_id: customerId,
      items: [{ product_id: catalog.seats }],
      trial_days: 14,
    });
    expect(shortTrial).toMatchObject({
      status: 'trialing',
      current_period_start: '2026-03-10T00:00:00.000Z',
      current_period_end: '2026-03-24T00:00:00.000Z',
      next_billing_date: '2026-03-24T00:00:00.000Z',
    });
    const termed = await create({
      customer_id: customerId,
      items: [{ product_id: quarterlySeats }],
      billing_period: 'quarterly',
      term_type: 'termed',
      initial_term_months: 12,
      auto_renew: false,
    });
    expect(termed).toMatchObject({
      current_period_end: '2026-06-10T00:00:00.000Z',
      subscription_end_date: '2027-03-10T00:00:00.000Z',
      initial_term_months: 12,
      auto_renew: false,
    });
    // the period follows the product when not given
    const annual = await create({ customer_id: customerId, items: [{ product_id: annualSeats }] });
    expect(annual).toMatchObject({
      billing_period: 'annually',
      current_period_end: '2027-03-10T00:00:00.000Z',
    });
    // ... the first recurring one, when a one-time item comes first (it has no period of its own)
    const setupFee = await productIn(database.db, orgId, {
      name: 'Setup fee',
      unit_price: '50.00',
      pricing_type: 'one_time',
    });
    const withFee = await create({
      customer_id: customerId,
      items: [{ product_id: setupFee }, { product_id: annualSeats }],
    });
    expect(withFee).toMatchObject({
      billing_period: 'annually',
      current_period_end: '2027-03-10T00:00:00.000Z',
    });
    const future = await create({
      customer_id: customerId,
      items: [{ product_id: catalog.seats }],
      start_date: new Date('2026-04-01T00:00:00Z'),
    });
    expect(future).toMatchObject({ status: 'pending', next_billing_date: '2026-04-01T00:00:00.000Z' });
  });

  it('refuses what cannot be billed, naming the fields', async () => {
    const usd = await productIn(database.db, orgId, {
      name: 'US seats',
      pricing_type: 'recurring',
      unit_price: '9',
      currency: 'USD',
    });
    const mixed = await failure(
      create({ customer_id: customerId, items: [{ product_id: catalog.seats }, { product_id: usd }] }),
    );
    // the rule a change checks too: the subscription is billed in its first item's currency
    expect(mixed.details).toEqual([
      {
        field: 'items.1.product_id',
        message: `Product ${usd} is priced in USD; this subscription is billed in CAD.`,
        code: 'invalid_value',
      },
    ]);
    const included = await failure(
      create({ customer_id: customerId, items: [{ product_id: catalog.seats, included_units: '5' }] }),
    );
    expect(included.details?.[0]?.field).toBe('items.0.included_units');
    const setup = await productIn(database.db, orgId, {
      name: 'Setup',
      pricing_type: 'one_time',
      unit_price: '99',
    });
    const oneOff = await failure(create({ customer_id: customerId, items: [{ product_id: setup }] }));
    expect(oneOff.details).toEqual([expect.objectContaining({ field: 'items', code: 'invalid_value' })]);
    expect(oneOff.details?.[0]?.message).toMatch(/at least one recurring or usage item/);
    const noTerm = await failure(
      create({ customer_id: customerId, items: [{ product_id: catalog.seats }], term_type: 'termed' }),
    );
    expect(noTerm.details?.[0]).toMatchObject({ field: 'initial_term_months', code: 'required' });
    const quarterly = await productIn(database.db, orgId, {
      name: 'Support (quarterly)',
      unit_price: '90',
      pricing_type: 'recurring',
      default_billing_period: 'quarterly',
    });
    const oddTerm = await failure(
      create({
        customer_id: customerId,
        items: [{ product_id: quarterly }],
        billing_period: 'quarterly',
        term_type: 'termed',
        initial_term_months: 4,
      }),
    );
    expect(oddTerm.details?.[0]?.message).toMatch(/multiple of 3/);
    // a price is per its product's period: a monthly product billed quarterly would be a wrong bill
    const otherPeriod = await failure(
      create({
        customer_id: customerId,
        items: [{ product_id: catalog.seats }],
        billing_period: 'quarterly',
      }),
    );
    expect(otherPeriod.details).toEqual([
      {
        field: 'items.0.product_id',
        message: `Product ${catalog.seats} is priced monthly; this subscription is billed quarterly.`,
        code: 'invalid_value',
      },
    ]);
    const mixedPeriods = await failure(
      create({ customer_id: customerId, items: [{ product_id: catalog.seats }, { product_id: quarterly }] }),
    );
    expect(mixedPeriods.details?.map((d) => d.field)).toEqual(['items.1.product_id']);
    const noItems = await failure(create({ customer_id: customerId, items: [] }));
    expect(noItems.details?.[0]?.field).toBe('items');
  });

  it('refuses prices and quantities that could never fit an invoice, naming the field, and writes nothing', async () => {
    // a price an invoice holds, at a quantity it cannot: every billing run would fail on it
    const expensive = await createProduct(database.db, orgId, {
      name: 'Expensive',
      pricing_type: 'recurring',
      unit_price: '99999999999.99999999',
    });
    const before = await database.db.query('SELECT count(*)::int AS n FROM subscriptions WHERE org_id = $1', [
      orgId,
    ]);
    const refused = await failure(
      create({ customer_id: customerId, items: [{ product_id: expensive.id, quantity: 1_000_000 }] }),
    );
    expect(refused.code).toBe('VALIDATION_ERROR');
    expect(refused.details).toEqual([
      expect.objectContaining({ field: 'items.0.quantity', code: 'out_of_range' }),
    ]);
    // each fits, together they do not
    const together = await failure(
      create({
        customer_id: customerId,
        items: [
          { product_id: expensive.id, quantity: 5 },
          { product_id: expensive.id, quantity: 5 },
        ],
      }),
    );
    expect(together.details?.map((d) => d.field)).toEqual(['items']);
    // a price override is judged the same way
    const overridden = await failure(
      create({
        customer_id: customerId,
        items: [{ product_id: catalog.seats, quantity: 2, unit_price: '900000000000' }],
      }),
    );
    expect(overridden.details?.map((d) => d.field)).toEqual(['items.0.quantity']);
    const after = await database.db.query('SELECT count(*)::int AS n FROM subscriptions WHERE org_id = $1', [
      orgId,
    ]);
    expect(after.rows).toEqual(before.rows);
    // the largest quantity that fits is accepted
    await create({ customer_id: customerId, items: [{ product_id: expensive.id, quantity: 8 }] });
    // and a product whose one unit could not be invoiced is refused at creation
    const product = await failure(
      createProduct(database.db, orgId, {
        name: 'Too much',
        pricing_type: 'recurring',
        unit_price: '900000000000',
      }),
    );
    expect(product.details).toEqual([expect.objectContaining({ field: 'unit_price', code: 'out_of_range' })]);
  });

  it("an unknown customer or product, or another organization's, is not found", async () => {
    const other = await createTestOrg(database.db);
    const theirs = await basicCatalog(database.db, other.orgId);
    const theirCustomer = await customerIn(database.db, other.orgId);
    expect(
      (await failure(create({ customer_id: theirCustomer, items: [{ product_id: catalog.seats }] }))).message,
    ).toBe(`Customer ${theirCustomer} not found.`);
    expect(
      (await failure(create({ customer_id: customerId, items: [{ product_id: theirs.seats }] }))).message,
    ).toBe(`Product ${theirs.seats} not found.`);
    expect((await outbox(database.db, other.orgId)).length).toBe(0);
  });
});

describe('canceling subscriptions', () => {
  const cancel = (subscriptionId: number, atPeriodEnd = false, org?: number) =>
    database.db.transaction((tx) => cancelSubscription(tx, { subscriptionId, atPeriodEnd, orgId: org, now }));

  it('now: canceled and ended, subscription.canceled emitted; a second cancel is refused', async () => {
    const subscription = await create({ customer_id: customerId, items: [{ product_id: catalog.seats }] });
    const canceled = await cancel(subscription.id);
    expect(canceled).toMatchObject({
      status: 'canceled',
      canceled_at: now.toISOString(),
      ended_at: now.toISOString(),
    });
    const events = (await outbox(database.db, orgId, 'subscription.canceled')).filter(
      (e) => e.data.id === subscription.id,
    );
    expect(events.map((e) => e.data.status)).toEqual(['canceled']);
    const again = await failure(cancel(subscription.id));
    expect(again.code).toBe('CONFLICT');
    expect(again.message).toBe(
      `Subscription ${subscription.id} is canceled and cannot become canceled (canceled is final).`,
    );
  });

  it('at period end: flagged, still active, no event yet; flagging twice is refused', async () => {
    const subscription = await create({ customer_id: customerId, items: [{ product_id: catalog.seats }] });
    const flagged = await cancel(subscription.id, true);
    expect(flagged).toMatchObject({
      status: 'active',
      cancel_at_period_end: true,
      canceled_at: now.toISOString(),
      ended_at: null,
    });
    expect(
      (await outbox(database.db, orgId, 'subscription.canceled')).filter(
        (e) => e.data.id === subscription.id,
      ),
    ).toEqual([]);
    expect((await failure(cancel(subscription.id, true))).message).toMatch(/already set to cancel/);
  });

  it('a pending subscription cannot be canceled (state machines: pending -> trialing | active only)', async () => {
    const pending = await create({
      customer_id: customerId,
      items: [{ product_id: catalog.seats }],
      start_date: new Date('2026-05-01T00:00:00Z'),
    });
    expect((await failure(cancel(pending.id))).message).toMatch(/is pending and cannot become canceled/);
  });

  it("another organization's subscription is not found", async () => {
    const subscription = await create({ customer_id: customerId, items: [{ product_id: catalog.seats }] });
    const other = await createTestOrg(database.db);
    expect((await failure(cancel(subscription.id, false, other.orgId))).code).toBe('NOT_FOUND');
    expect((await failure(cancel(987_654))).message).toBe('Subscription 987654 not found.');
  });
});
