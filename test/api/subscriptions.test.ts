import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Subscription } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import {
  type BillingScenario,
  insertBillingScenario,
  insertCustomer,
  insertProduct,
  insertSubscription,
} from '../helpers/billing-fixtures.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommonRouteTests } from '../helpers/route-suite.js';

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;
let scenario: BillingScenario;
let subscriptionOfB: number;

beforeAll(async () => {
  api = await startTestApi();
  orgA = await createTestOrg(api.platform.db);
  orgB = await createTestOrg(api.platform.db);
  scenario = await insertBillingScenario(api.platform.db, orgA.orgId);
  const customerOfB = await insertCustomer(api.platform.db, orgB.orgId, { name: 'B customer' });
  const productOfB = await insertProduct(api.platform.db, orgB.orgId, { name: 'B product' });
  subscriptionOfB = (
    await insertSubscription(api.platform.db, orgB.orgId, {
      customerId: customerOfB.id,
      items: [{ productId: productOfB.id }],
    })
  ).id;
});
afterAll(() => api?.close());

const SUBSCRIPTION_KEYS = [
  'id',
  'object',
  'customer_id',
  'status',
  'title',
  'start_date',
  'next_billing_date',
  'billing_period',
  'current_period_start',
  'current_period_end',
  'term_type',
  'initial_term_months',
  'auto_renew',
  'subscription_end_date',
  'trial_end_date',
  'cancel_at_period_end',
  'canceled_at',
  'ended_at',
  'items',
  'pending_change',
  'created_at',
  'updated_at',
].sort();
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const list = (query = '') => api.request({ path: `/subscriptions${query}`, key: orgA.apiKey });
const idsOf = (body: { data: Subscription[] }) => body.data.map((s) => s.id);

describe('GET /subscriptions', () => {
  it('lists subscriptions with every field and their items, newest first', async () => {
    const response = await list();
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.pagination).toEqual({ limit: 25, offset: 0, total: 4, has_more: false });
    const { active, trialing, canceled, pastDue } = scenario.subscriptions;
    expect(idsOf(body)).toEqual([pastDue, canceled, trialing, active]);
    for (const subscription of body.data as Subscription[]) {
      expect(Object.keys(subscription).sort()).toEqual(SUBSCRIPTION_KEYS);
      expect(subscription.object).toBe('subscription');
      for (const field of [
        'start_date',
        'next_billing_date',
        'current_period_start',
        'created_at',
      ] as const) {
        expect(subscription[field]).toMatch(ISO_UTC);
      }
    }
    const team = (body.data as Subscription[]).find((s) => s.id === active)!;
    expect(team).toMatchObject({
      status: 'active',
      title: 'Team plan',
      billing_period: 'monthly',
      term_type: 'evergreen',
      initial_term_months: null,
      start_date: '2026-01-01T00:00:00.000Z',
      current_period_end: '2026-02-01T00:00:00.000Z',
    });
    expect(team.items).toEqual([
      {
        id: expect.any(Number),
        product_id: scenario.products.seats,
        product_name: 'Seats',
        quantity: 5,
        unit_price: '49.99000000',
        usage_type: 'licensed',
        included_units: '0.00000000',
        usage_limit: null,
      },
      {
        id: scenario.meteredItemIds[0],
        product_id: scenario.products.apiCalls,
        product_name: 'API calls',
        quantity: 1,
        unit_price: '0.00125000',
        usage_type: 'metered',
        included_units: '1000.00000000',
        usage_limit: null,
      },
      expect.objectContaining({ id: scenario.meteredItemIds[1], usage_type: 'metered' }),
    ]);
    const ended = (body.data as Subscription[]).find((s) => s.id === canceled)!;
    expect(ended).toMatchObject({
      status: 'canceled',
      term_type: 'termed',
      initial_term_months: 12,
      canceled_at: '2026-03-15T12:00:00.000Z',
    });
    expect(response.body).not.toContain('B customer');
  });

  it('filters on customer_id and status, composing with each other and with paging', async () => {
    const { ontario } = scenario.customers;
    const { trialing, pastDue } = scenario.subscriptions;
    expect(idsOf((await list(`?customer_id=${ontario.id}`)).json())).toEqual([pastDue, trialing]);
    expect(idsOf((await list('?status=trialing')).json())).toEqual([trialing]);
    expect(idsOf((await list(`?customer_id=${ontario.id}&status=past_due`)).json())).toEqual([pastDue]);
    expect((await list(`?customer_id=${ontario.id}&status=active`)).json()).toEqual({
      data: [],
      pagination: { limit: 25, offset: 0, total: 0, has_more: false },
    });
    const paged = (await list(`?customer_id=${ontario.id}&limit=1&offset=1`)).json();
    expect(idsOf(paged)).toEqual([trialing]);
    expect(paged.pagination).toEqual({ limit: 1, offset: 1, total: 2, has_more: false });
    const first = (await list(`?customer_id=${ontario.id}&limit=1`)).json();
    expect(first.pagination).toEqual({ limit: 1, offset: 0, total: 2, has_more: true });
  });

  it("never shows another organization's subscriptions, even when filtered by its customer", async () => {
    const { rows } = await api.platform.db.query('SELECT customer_id FROM subscriptions WHERE id = $1', [
      subscriptionOfB,
    ]);
    const body = (await list(`?customer_id=${rows[0]!.customer_id}`)).json();
    expect(body.data).toEqual([]);
    expect(body.pagination.total).toBe(0);
  });

  it('rejects an unknown or wrongly cased status and a non-integer customer_id with 422', async () => {
    for (const [query, field] of [
      ['?status=ACTIVE', 'status'],
      ['?status=cancelled', 'status'],
      ['?customer_id=abc', 'customer_id'],
      ['?customer_id=0', 'customer_id'],
      ['?customer_id=1.5', 'customer_id'],
      ['?customer_id=-3', 'customer_id'],
    ] as const) {
      const response = await list(query);
      expect(response.statusCode, query).toBe(422);
      const body = response.json();
      expect(body.error_code).toBe('VALIDATION_ERROR');
      expect(
        body.details.map((d: { field: string }) => d.field),
        query,
      ).toEqual([field]);
    }
    const both = await list('?status=nope&customer_id=x&limit=0');
    expect(
      both
        .json()
        .details.map((d: { field: string }) => d.field)
        .sort(),
    ).toEqual(['customer_id', 'limit', 'status']);
  });

  describe('common route checks', () => {
    runCommonRouteTests(() => ({
      api,
      key: orgA.apiKey,
      request: { method: 'GET', path: '/subscriptions' },
    }));
  });
});

describe('GET /subscriptions/{subscription_id}', () => {
  it('retrieves one subscription with its items', async () => {
    const id = scenario.subscriptions.pastDue;
    const response = await api.request({ path: `/subscriptions/${id}`, key: orgA.apiKey });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({
      id,
      object: 'subscription',
      customer_id: scenario.customers.ontario.id,
      status: 'past_due',
      items: [{ id: scenario.meteredItemIds[2], usage_type: 'metered', included_units: '0.00000000' }],
    });
  });

  it("retrieves a subscription for its own organization's key, whichever organization that is", async () => {
    const response = await api.request({ path: `/subscriptions/${subscriptionOfB}`, key: orgB.apiKey });
    expect(response.statusCode).toBe(200);
    expect(response.json().data.id).toBe(subscriptionOfB);
  });

  it('answers 404 for an id that is not a positive integer', async () => {
    const response = await api.request({ path: '/subscriptions/sub_123', key: orgA.apiKey });
    expect(response.statusCode).toBe(404);
  });

  describe('common route checks', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: orgA.apiKey,
        request: { method: 'GET', path: `/subscriptions/${scenario.subscriptions.active}` },
        crossOrg: { path: (id) => `/subscriptions/${id}`, foreignId: subscriptionOfB, missingId: 987654321 },
      }),
      { namesRecord: true },
    );
  });
});
