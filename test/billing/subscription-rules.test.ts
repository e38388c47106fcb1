import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling } from '../../libs/billing/index.js';
import { ApiError } from '../../libs/errors/index.js';
import {
  cancelSubscription,
  changeSubscription,
  createSubscription,
  getSubscription,
  type NewSubscription,
  unparkSubscription,
} from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase, withoutIndexOrder } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { basicCatalog, customerIn, invoicesOf, productIn } from './fixtures.js';

/*
 * The boundaries of creating and canceling subscriptions (docs/architecture.md, the subscription
 * state machine): when a start is in the future, which products a new subscription takes, and
 * which cancels are refused (409) or do not go together (422), against real Postgres.
 */

let database: TestDatabase;
let orgId: number;
let customerId: number;
let catalog: { seats: number; apiCalls: number };

beforeAll(async () => {
  database = await createTestDatabase('subscription_rules');
  ({ orgId } = await createTestOrg(database.db));
  catalog = await basicCatalog(database.db, orgId);
  customerId = await customerIn(database.db, orgId);
});
afterAll(() => database.drop());

const at = (iso: string) => new Date(iso);

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const create = (input: NewSubscription, now: Date) =>
  database.db.transaction((tx) => createSubscription(tx, orgId, input, { now }));

const cancel = (input: Omit<Parameters<typeof cancelSubscription>[1], 'now'>, now: Date) =>
  database.db.transaction((tx) => cancelSubscription(tx, { ...input, now }));

/** Seats from Mar 1 2026, created then: its first period runs to Apr 1. */
const running = () =>
  create(
    {
      customer_id: customerId,
      items: [{ product_id: catalog.seats }],
      start_date: at('2026-03-01T00:00:00Z'),
    },
    at('2026-03-01T00:00:00Z'),
  );

describe('creating subscriptions: boundaries', () => {
  it('a start at this very instant is not in the future: active at once, not pending', async () => {
    const now = at('2026-03-10T00:00:00Z');
    const subscription = await create(
      { customer_id: customerId, items: [{ product_id: catalog.seats }], start_date: now },
      now,
    );
    expect(subscription).toMatchObject({
      status: 'active',
      start_date: '2026-03-10T00:00:00.000Z',
      next_billing_date: '2026-04-10T00:00:00.000Z',
    });
  });

  it('a product no longer sold is refused for a new subscription, naming the item', async () => {
    const retired = await productIn(database.db, orgId, {
      name: 'Retired seats',
      unit_price: '5.00',
      pricing_type: 'recurring',
      is_active: false,
    });
    const refused = await failure(
      create(
        { customer_id: customerId, items: [{ product_id: catalog.seats }, { product_id: retired }] },
        at('2026-03-10T00:00:00Z'),
      ),
    );
    expect(refused.code).toBe('VALIDATION_ERROR');
    expect(refused.details).toEqual([
      { field: 'items.1.product_id', message: `Product ${retired} is not active.`, code: 'invalid_value' },
    ]);
  });

  it('defaults: no included units on a metered item; a title of the product names cut at 255', async () => {
    const longName = (letter: string) =>
      productIn(database.db, orgId, {
        name: letter.repeat(120),
        unit_price: '1.00',
        pricing_type: 'recurring',
      });
    const names = [await longName('a'), await longName('b'), await longName('c')];
    const subscription = await create(
      {
        customer_id: customerId,
        items: [...names.map((product_id) => ({ product_id })), { product_id: catalog.apiCalls }],
      },
      at('2026-03-10T00:00:00Z'),
    );
    expect(subscription.title).toBe(`${'a'.repeat(120)}, ${'b'.repeat(120)}, ${'c'.repeat(11)}`);
    expect(subscription.title).toHaveLength(255);
    expect(subscription.items.at(-1)).toMatchObject({ usage_type: 'metered', included_units: '0.00000000' });
  });

  it('only a termed subscription has an initial term: evergreen with one is a 422 naming it', async () => {
    const refused = await failure(
      create(
        { customer_id: customerId, items: [{ product_id: catalog.seats }], initial_term_months: 12 },
        at('2026-03-10T00:00:00Z'),
      ),
    );
    expect(refused.code).toBe('VALIDATION_ERROR');
    expect(refused.details).toEqual([expect.objectContaining({ field: 'initial_term_months' })]);
  });

  it('a start at the horizon itself is a 422 naming start_date; the instant before is pending', async () => {
    const now = at('2026-03-10T00:00:00Z');
    const refused = await failure(
      create(
        {
          customer_id: customerId,
          items: [{ product_id: catalog.seats }],
          start_date: at('2100-01-01T00:00:00Z'),
        },
        now,
      ),
    );
    expect(refused.code).toBe('VALIDATION_ERROR');
    expect(refused.details).toEqual([
      { field: 'start_date', message: 'Must be before 2100-01-01T00:00:00Z.', code: 'out_of_range' },
    ]);
    const last = await create(
      {
        customer_id: customerId,
        items: [{ product_id: catalog.seats }],
        start_date: at('2099-12-31T23:59:59.999Z'),
      },
      now,
    );
    expect(last).toMatchObject({ status: 'pending', start_date: '2099-12-31T00:00:00.000Z' });
  });

  it('after a trial, periods and the term anchor on the day the trial ends, not the start', async () => {
    const { orgId: org } = await createTestOrg(database.db);
    const { seats } = await basicCatalog(database.db, org);
    const customer = await customerIn(database.db, org);
    // from Mar 10, 30 days of trial: the first paid period starts Apr 9, and runs to May 9
    const subscription = await database.db.transaction((tx) =>
      createSubscription(
        tx,
        org,
        {
          customer_id: customer,
          items: [{ product_id: seats }],
          trial_days: 30,
          term_type: 'termed',
          initial_term_months: 12,
        },
        { now: at('2026-03-10T12:00:00Z') },
      ),
    );
    expect(subscription).toMatchObject({
      status: 'trialing',
      trial_end_date: '2026-04-09T00:00:00.000Z',
      subscription_end_date: '2027-04-09T00:00:00.000Z',
    });
    await runBilling(database.db, {
      usage: (tx) => new PostgresUsageAggregator(tx),
      orgId: org,
      now: at('2026-04-09T00:00:00Z'),
    });
    expect(await getSubscription(database.db, org, subscription.id)).toMatchObject({
      status: 'active',
      current_period_start: '2026-04-09T00:00:00.000Z',
      current_period_end: '2026-05-09T00:00:00.000Z',
      next_billing_date: '2026-05-09T00:00:00.000Z',
    });
  });
});

describe('canceling subscriptions: refusals', () => {
  it('a parked subscription is a 409 unless canceled without invoicing', async () => {
    const subscription = await running();
    await database.db.query(
      `UPDATE subscriptions SET billing_parked_at = now(), billing_parked_reason = 'test' WHERE id = $1`,
      [subscription.id],
    );
    const refused = await failure(
      cancel({ subscriptionId: subscription.id, orgId }, at('2026-03-15T00:00:00Z')),
    );
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/is parked: .*\(test\); cancel it without invoicing/);
    expect(await getSubscription(database.db, orgId, subscription.id)).toMatchObject({ status: 'active' });
    expect(
      await cancel(
        { subscriptionId: subscription.id, orgId, withoutInvoicing: true },
        at('2026-03-15T00:00:00Z'),
      ),
    ).toMatchObject({ status: 'canceled' });
    expect(await invoicesOf(database.db, subscription.id)).toEqual([]);
  });

  it('at the very instant its period ends, the period is not invoiced yet: 409, nothing canceled', async () => {
    const subscription = await running();
    for (const atPeriodEnd of [false, true]) {
      const refused = await failure(
        cancel({ subscriptionId: subscription.id, orgId, atPeriodEnd }, at('2026-04-01T00:00:00Z')),
      );
      expect(refused.code).toBe('CONFLICT');
      expect(refused.message).toMatch(/period that ended 2026-04-01T00:00:00.000Z and is not invoiced yet/);
    }
    expect(await getSubscription(database.db, orgId, subscription.id)).toMatchObject({
      status: 'active',
      cancel_at_period_end: false,
      canceled_at: null,
    });
    expect(await invoicesOf(database.db, subscription.id)).toEqual([]);
  });

  it('a paused subscription has no period to end: at period end is 409, now cancels it', async () => {
    const subscription = await running();
    await database.db.query(`UPDATE subscriptions SET status = 'paused' WHERE id = $1`, [subscription.id]);
    const refused = await failure(
      cancel({ subscriptionId: subscription.id, orgId, atPeriodEnd: true }, at('2026-03-15T00:00:00Z')),
    );
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/is paused and has no running period to end/);
    expect(await getSubscription(database.db, orgId, subscription.id)).toMatchObject({
      status: 'paused',
      cancel_at_period_end: false,
      canceled_at: null,
    });
    const canceled = await cancel(
      { subscriptionId: subscription.id, orgId, withoutInvoicing: true },
      at('2026-03-15T00:00:00Z'),
    );
    expect(canceled).toMatchObject({ status: 'canceled', ended_at: '2026-03-15T00:00:00.000Z' });
  });

  it('a paused subscription past its period end bills no period: a cancel now is not refused for it', async () => {
    const subscription = await running();
    await database.db.query(`UPDATE subscriptions SET status = 'paused' WHERE id = $1`, [subscription.id]);
    const canceled = await cancel({ subscriptionId: subscription.id, orgId }, at('2026-04-15T00:00:00Z'));
    expect(canceled).toMatchObject({ status: 'canceled', ended_at: '2026-04-15T00:00:00.000Z' });
  });

  it('without invoicing ends it now: with at period end it is a 422 naming without_invoicing', async () => {
    const subscription = await running();
    const refused = await failure(
      cancel(
        { subscriptionId: subscription.id, orgId, atPeriodEnd: true, withoutInvoicing: true },
        at('2026-03-15T00:00:00Z'),
      ),
    );
    expect(refused.code).toBe('VALIDATION_ERROR');
    expect(refused.details).toEqual([
      expect.objectContaining({ field: 'without_invoicing', code: 'invalid_value' }),
    ]);
    expect(await getSubscription(database.db, orgId, subscription.id)).toMatchObject({
      status: 'active',
      cancel_at_period_end: false,
      canceled_at: null,
    });
  });
});

describe('changing items: refusals (409, nothing changed)', () => {
  const change = (subscriptionId: number, body: unknown, now: string) =>
    changeSubscription(database.db, { subscriptionId, orgId, change: body, now: at(now) });
  const quantities = async (subscriptionId: number) =>
    (await getSubscription(database.db, orgId, subscriptionId)).items.map((item) => item.quantity);

  it('at the very instant its period ends, until the run invoices it', async () => {
    const subscription = await running();
    const item = subscription.items[0]!.id;
    const refused = await failure(
      change(subscription.id, { items: [{ id: item, quantity: 4 }] }, '2026-04-01T00:00:00Z'),
    );
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/period that ended 2026-04-01T00:00:00.000Z and is not invoiced yet/);
    expect(await quantities(subscription.id)).toEqual([1]);
  });

  it('not for a paused subscription past its period end: it bills no period, so it changes, unprorated', async () => {
    const subscription = await running();
    await database.db.query(`UPDATE subscriptions SET status = 'paused' WHERE id = $1`, [subscription.id]);
    const changed = await change(
      subscription.id,
      { items: [{ id: subscription.items[0]!.id, quantity: 4 }] },
      '2026-04-15T00:00:00Z',
    );
    expect(changed.proration_lines).toEqual([]);
    expect(await quantities(subscription.id)).toEqual([4]);
  });

  it('before its current period begins; at its very first instant it changes', async () => {
    const subscription = await running();
    const item = subscription.items[0]!.id;
    const refused = await failure(
      change(subscription.id, { items: [{ id: item, quantity: 4 }] }, '2026-02-28T23:59:59Z'),
    );
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/current period begins 2026-03-01T00:00:00.000Z, after this change/);
    expect(await quantities(subscription.id)).toEqual([1]);
    // the whole period left: a credit for 1 seat, a charge for 4
    const changed = await change(
      subscription.id,
      { items: [{ id: item, quantity: 4 }] },
      '2026-03-01T00:00:00Z',
    );
    expect(changed.proration_lines.map((line) => line.amount)).toEqual(['-10.00000000', '40.00000000']);
    expect(await quantities(subscription.id)).toEqual([4]);
  });

  it("at its term's last period end only if it renews then: one that ends there is a 409", async () => {
    const lastPeriod = (auto_renew: boolean) =>
      create(
        {
          customer_id: customerId,
          items: [{ product_id: catalog.seats }],
          start_date: at('2026-03-01T00:00:00Z'),
          term_type: 'termed',
          initial_term_months: 1,
          auto_renew,
        },
        at('2026-03-01T00:00:00Z'),
      );
    const atTheEnd = (subscription: Awaited<ReturnType<typeof lastPeriod>>) =>
      change(
        subscription.id,
        { items: [{ id: subscription.items[0]!.id, quantity: 4 }], effective: 'period_end' },
        '2026-03-10T00:00:00Z',
      );
    const renewing = await lastPeriod(true);
    expect(renewing.subscription_end_date).toBe('2026-04-01T00:00:00.000Z');
    const scheduled = await atTheEnd(renewing);
    expect(scheduled.subscription.pending_change).toMatchObject({
      effective_at: '2026-04-01T00:00:00.000Z',
      items: [expect.objectContaining({ quantity: 4 })],
    });
    const ending = await lastPeriod(false);
    const refused = await failure(atTheEnd(ending));
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/ends at the end of its period \(2026-04-01T00:00:00.000Z\)/);
    expect((await getSubscription(database.db, orgId, ending.id)).pending_change).toBeNull();
    // its items still change now, for the rest of that last period
    const now = await change(
      ending.id,
      { items: [{ id: ending.items[0]!.id, quantity: 4 }] },
      '2026-03-10T00:00:00Z',
    );
    expect(now.subscription.items.map((item) => item.quantity)).toEqual([4]);
    expect(await quantities(ending.id)).toEqual([4]);
  });

  it('a pending subscription changes now, never at a period end it has not begun', async () => {
    const pending = await create(
      {
        customer_id: customerId,
        items: [{ product_id: catalog.seats }],
        start_date: at('2026-05-01T00:00:00Z'),
      },
      at('2026-03-10T00:00:00Z'),
    );
    const item = pending.items[0]!.id;
    const refused = await failure(
      change(
        pending.id,
        { items: [{ id: item, quantity: 4 }], effective: 'period_end' },
        '2026-03-11T00:00:00Z',
      ),
    );
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/has not started/);
    expect((await getSubscription(database.db, orgId, pending.id)).pending_change).toBeNull();
    const now = await change(pending.id, { items: [{ id: item, quantity: 4 }] }, '2026-03-11T00:00:00Z');
    expect(now.subscription.items.map((i) => i.quantity)).toEqual([4]);
  });

  it('an expired or a parked subscription', async () => {
    const expired = await running();
    await database.db.query(`UPDATE subscriptions SET status = 'expired' WHERE id = $1`, [expired.id]);
    const item = expired.items[0]!.id;
    const refusedExpired = await failure(
      change(expired.id, { items: [{ id: item, quantity: 4 }] }, '2026-03-11T00:00:00Z'),
    );
    expect(refusedExpired.code).toBe('CONFLICT');
    expect(refusedExpired.message).toBe(`Subscription ${expired.id} is expired; its items cannot change.`);
    expect(await quantities(expired.id)).toEqual([1]);

    const parked = await running();
    await database.db.query(
      `UPDATE subscriptions SET billing_parked_at = now(), billing_parked_reason = 'test' WHERE id = $1`,
      [parked.id],
    );
    const refusedParked = await failure(
      change(parked.id, { items: [{ id: parked.items[0]!.id, quantity: 4 }] }, '2026-03-11T00:00:00Z'),
    );
    expect(refusedParked.code).toBe('CONFLICT');
    expect(refusedParked.message).toMatch(/is parked \(test\)/);
    expect(await quantities(parked.id)).toEqual([1]);
  });
});

describe('changing items: what is read afterwards', () => {
  it('items in id order, wherever a changed row lies', async () => {
    const subscription = await create(
      {
        customer_id: customerId,
        items: [{ product_id: catalog.apiCalls }, { product_id: catalog.seats }],
        start_date: at('2026-03-01T00:00:00Z'),
      },
      at('2026-03-01T00:00:00Z'),
    );
    const [calls, seat] = subscription.items.map((item) => item.id);
    const itemsWhereTheyLie = async () =>
      (
        await database.db.query<{ id: number }>(
          'SELECT id FROM subscription_items WHERE subscription_id = $1 ORDER BY ctid',
          [subscription.id],
        )
      ).rows.map((row) => row.id);
    // the change rewrites the first item's row, which then lies after the other
    await changeSubscription(database.db, {
      subscriptionId: subscription.id,
      orgId,
      change: { items: [{ id: calls, included_units: '100' }, { id: seat }] },
      now: at('2026-03-11T00:00:00Z'),
    });
    expect(await itemsWhereTheyLie()).toEqual([seat, calls]);
    const read = await withoutIndexOrder(database.db, (tx) => getSubscription(tx, orgId, subscription.id));
    expect(read.items.map((item) => item.id)).toEqual([calls, seat]);
  });

  it('an item left out is removed: neither the answer nor a later read shows it', async () => {
    const subscription = await create(
      {
        customer_id: customerId,
        items: [{ product_id: catalog.seats, quantity: 2 }, { product_id: catalog.apiCalls }],
        start_date: at('2026-03-01T00:00:00Z'),
      },
      at('2026-03-01T00:00:00Z'),
    );
    const [seat, calls] = subscription.items;
    const changed = await changeSubscription(database.db, {
      subscriptionId: subscription.id,
      orgId,
      change: { items: [{ id: seat!.id }] },
      now: at('2026-03-11T00:00:00Z'),
    });
    expect(changed.subscription.items.map((item) => item.id)).toEqual([seat!.id]);
    const read = await getSubscription(database.db, orgId, subscription.id);
    expect(read.items.map((item) => item.id)).toEqual([seat!.id]);
    expect(read.items).not.toContainEqual(expect.objectContaining({ id: calls!.id }));
  });
});

describe('unparking', () => {
  it("a subscription that is not parked is a 409; another organization's is not found", async () => {
    const subscription = await running();
    const notParked = await failure(
      database.db.transaction((tx) => unparkSubscription(tx, { subscriptionId: subscription.id, orgId })),
    );
    expect(notParked.code).toBe('CONFLICT');
    expect(notParked.message).toBe(`Subscription ${subscription.id} is not parked.`);
    await database.db.query(
      `UPDATE subscriptions SET billing_parked_at = now(), billing_parked_reason = 'test' WHERE id = $1`,
      [subscription.id],
    );
    const other = await createTestOrg(database.db);
    const foreign = await failure(
      database.db.transaction((tx) =>
        unparkSubscription(tx, { subscriptionId: subscription.id, orgId: other.orgId }),
      ),
    );
    expect(foreign.code).toBe('NOT_FOUND');
    const { rows } = await database.db.query(
      'SELECT billing_parked_reason FROM subscriptions WHERE id = $1',
      [subscription.id],
    );
    expect(rows).toEqual([{ billing_parked_reason: 'test' }]);
  });

  it('takes a parked subscription back whole: neither the mark nor its reason stays to refuse a cancel', async () => {
    const subscription = await running();
    await database.db.query(
      `UPDATE subscriptions SET billing_parked_at = now(), billing_parked_reason = 'test' WHERE id = $1`,
      [subscription.id],
    );
    await database.db.transaction((tx) => unparkSubscription(tx, { subscriptionId: subscription.id, orgId }));
    const { rows } = await database.db.query(
      'SELECT billing_parked_at, billing_parked_reason FROM subscriptions WHERE id = $1',
      [subscription.id],
    );
    expect(rows).toEqual([{ billing_parked_at: null, billing_parked_reason: null }]);
    expect(
      await cancel({ subscriptionId: subscription.id, orgId, atPeriodEnd: true }, at('2026-03-15T00:00:00Z')),
    ).toMatchObject({ status: 'active', cancel_at_period_end: true });
  });
});
