import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '../../libs/customers/index.js';
import { CreateCustomer, type SubscriptionChange } from '../../libs/schemas/index.js';
import { createSubscription } from '../../libs/subscriptions/index.js';
import { productIn } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { inProcessConsole } from '../helpers/console.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

/**
 * POST /subscriptions/{id}/changes over HTTP and the console's `subscription update`: one domain
 * function behind both (tested with the billing run in test/billing/subscription-changes.test.ts);
 * here the contract: status codes, error bodies naming each field, tenancy, and the same answer
 * from both doors.
 */

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;
let env: Record<string, string>;
let seats: number;
let apiCalls: number;
let customerId: number;

beforeAll(async () => {
  api = await startTestApi();
  orgA = await createTestOrg(api.platform.db, { name: 'Changes A' });
  orgB = await createTestOrg(api.platform.db, { name: 'Changes B' });
  const db = api.platform.db;
  seats = await productIn(db, orgA.orgId, {
    name: 'Seats',
    unit_price: '10.00',
    pricing_type: 'recurring',
    currency: 'CAD',
  });
  apiCalls = await productIn(db, orgA.orgId, {
    name: 'API calls',
    unit_price: '0.01',
    pricing_type: 'usage',
    currency: 'CAD',
  });
  customerId = (
    await createCustomer(
      db,
      orgA.orgId,
      CreateCustomer.parse({ name: 'Acme', country: 'CA', state_province: 'ON' }),
    )
  ).id;
  env = {
    DATABASE_URL: api.database.url,
    LOG_LEVEL: 'silent',
    PORT: '8080',
    HOST: '127.0.0.1',
    CLICKHOUSE_URL: '',
  };
});
afterAll(() => api?.close());

const run = inProcessConsole(() => env);

/** A subscription running now (its first period began today, midnight UTC). */
async function running(quantity = 2) {
  return api.platform.db.transaction((tx) =>
    createSubscription(tx, orgA.orgId, { customer_id: customerId, items: [{ product_id: seats, quantity }] }),
  );
}

const post = (id: number | string, payload: unknown, key = orgA.apiKey) =>
  api.request({ method: 'POST', path: `/subscriptions/${id}/changes`, key, payload: payload as object });

describe('POST /subscriptions/{id}/changes', () => {
  it('changes now: the subscription, its proration lines, when; a preview answers the same and writes nothing', async () => {
    for (let attempt = 0; ; attempt++) {
      // a fresh subscription per attempt: an attempt that straddled a second changed its own
      const subscription = await running();
      const item = subscription.items[0]!;
      const body = {
        items: [
          { id: item.id, quantity: 5 },
          { product_id: apiCalls, included_units: '1000' },
        ],
      };
      // a change is timed to the second: compare two answers given within the same second
      const preview = await post(subscription.id, { ...body, preview: true });
      expect(preview.statusCode, preview.body).toBe(200);
      const previewed = preview.json().data as SubscriptionChange;
      expect(
        (await api.request({ path: `/subscriptions/${subscription.id}`, key: orgA.apiKey })).json().data
          .items,
      ).toHaveLength(1);
      const response = await post(subscription.id, body);
      expect(response.statusCode, response.body).toBe(200);
      const change = response.json().data as SubscriptionChange;
      if (change.effective_at !== previewed.effective_at && attempt < 3) continue;
      expect(change.proration_lines).toEqual(previewed.proration_lines);
      // an added item's id is given when it is written: the preview's is provisional (and drew none)
      expect(previewed.subscription.items.map((i) => i.id)).toEqual([item.id, -1]);
      const withoutAddedId = (items: SubscriptionChange['subscription']['items']) =>
        items.map((i) => (i.id === item.id ? i : { ...i, id: 0 }));
      expect(withoutAddedId(change.subscription.items)).toEqual(withoutAddedId(previewed.subscription.items));
      expect(
        change.proration_lines.map((line) => [line.subscription_item_id, line.quantity, line.unit_price]),
      ).toEqual([
        [item.id, '2.0000', '10.00000000'],
        [item.id, '5.0000', '10.00000000'],
      ]);
      for (const line of change.proration_lines) {
        expect(line.amount).toMatch(/^-?\d+\.\d\d000000$/);
        expect(line.period_end).toBe(subscription.current_period_end);
      }
      expect(change.subscription.items.map((i) => [i.product_id, i.quantity, i.included_units])).toEqual([
        [seats, 5, '0.00000000'],
        [apiCalls, 1, '1000.00000000'],
      ]);
      expect(change.subscription.pending_change).toBeNull();
      // the subscription answered is the one read afterwards
      const read = await api.request({ path: `/subscriptions/${subscription.id}`, key: orgA.apiKey });
      expect(read.json().data).toEqual(change.subscription);
      break;
    }
  });

  it('schedules a change for the period end, shown as pending_change', async () => {
    const subscription = await running();
    const response = await post(subscription.id, {
      items: [{ id: subscription.items[0]!.id, quantity: 1 }],
      effective: 'period_end',
    });
    expect(response.statusCode, response.body).toBe(200);
    const change = response.json().data as SubscriptionChange;
    expect(change).toMatchObject({ proration_lines: [], effective_at: subscription.current_period_end });
    expect(change.subscription.pending_change).toEqual({
      items: [
        {
          id: subscription.items[0]!.id,
          product_id: seats,
          quantity: 1,
          included_units: '0.00000000',
          usage_limit: null,
        },
      ],
      effective_at: subscription.current_period_end,
    });
    const shown = await api.request({ path: `/subscriptions/${subscription.id}`, key: orgA.apiKey });
    expect(shown.json().data).toEqual(change.subscription);
  });

  it('answers 422 naming each field, 404 for what the organization does not have, 409 when canceled', async () => {
    const subscription = await running();
    const other = await running();
    const id = subscription.items[0]!.id;
    const invalid = await post(subscription.id, {
      items: [{ id, quantity: 0 }, { id }, { id: other.items[0]!.id, product_id: seats }, { quantity: -1 }],
      effective: 'tomorrow',
    });
    expect(invalid.statusCode, invalid.body).toBe(422);
    expect(invalid.json().error_code).toBe('VALIDATION_ERROR');
    const fields = (invalid.json().details as { field: string }[]).map((detail) => detail.field).sort();
    expect(fields).toEqual(
      ['effective', 'items.0.quantity', 'items.2.id', 'items.3.id', 'items.3.quantity'].sort(),
    );

    const semantic = await post(subscription.id, {
      items: [{ id, quantity: 2 }, { id: other.items[0]!.id }, { product_id: apiCalls, quantity: 3 }],
    });
    expect(semantic.statusCode, semantic.body).toBe(422);
    expect((semantic.json().details as { field: string }[]).map((detail) => detail.field)).toEqual([
      'items.1.id',
      'items.2.quantity',
    ]);

    expect((await post(subscription.id, { items: [{ product_id: 999_999_999 }] })).statusCode).toBe(404);
    expect((await post(999_999_999, { items: [{ id }] })).statusCode).toBe(404);
    expect((await post('abc', { items: [{ id }] })).statusCode).toBe(404);
    // another organization's subscription is not found, and nothing changed
    const foreign = await post(subscription.id, { items: [{ id, quantity: 9 }] }, orgB.apiKey);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error_code).toBe('NOT_FOUND');

    await api.platform.db.query(`UPDATE subscriptions SET status = 'canceled' WHERE id = $1`, [other.id]);
    const canceled = await post(other.id, { items: [{ id: other.items[0]!.id, quantity: 3 }] });
    expect(canceled.statusCode).toBe(409);
    expect(canceled.json().error_code).toBe('CONFLICT');
    const unchanged = await api.request({ path: `/subscriptions/${subscription.id}`, key: orgA.apiKey });
    expect(unchanged.json().data.items.map((i: { quantity: number }) => i.quantity)).toEqual([2]);
  });

  it('bounds a change: 1 to 100 items, quantity up to 1,000,000, decimals of 8 digits, not negative', async () => {
    const subscription = await running();
    const id = subscription.items[0]!.id;
    const fieldsOf = async (payload: unknown) => {
      const response = await post(subscription.id, { preview: true, ...(payload as object) });
      expect(response.statusCode, response.body).toBe(422);
      expect(response.json().error_code).toBe('VALIDATION_ERROR');
      return (response.json().details as { field: string }[]).map((detail) => detail.field);
    };
    expect(await fieldsOf({ items: [] })).toEqual(['items']);
    expect(await fieldsOf({ items: Array(101).fill({ product_id: apiCalls }) })).toEqual(['items']);
    expect(await fieldsOf({ items: [{ id, quantity: 1_000_001 }] })).toEqual(['items.0.quantity']);
    // an item kept twice is named where it repeats; two added items of one product are not a repeat
    expect(await fieldsOf({ items: [{ product_id: apiCalls }, { id }, { id, quantity: 3 }] })).toEqual([
      'items.2.id',
    ]);
    for (const [field, value] of [
      ['included_units', '1.123456789'],
      ['included_units', '-1'],
      ['usage_limit', '1.123456789'],
      ['usage_limit', '-1'],
    ] as const) {
      expect(await fieldsOf({ items: [{ id }, { product_id: apiCalls, [field]: value }] }), value).toEqual([
        `items.1.${field}`,
      ]);
    }
    // the bounds themselves are accepted, and a null usage_limit means none
    const edge = await post(subscription.id, {
      preview: true,
      items: [
        { id, quantity: 1_000_000 },
        { product_id: apiCalls, included_units: ' 1.12345678 ', usage_limit: null },
      ],
    });
    expect(edge.statusCode, edge.body).toBe(200);
    const items = (edge.json().data as SubscriptionChange).subscription.items;
    expect(items.map((i) => [i.quantity, i.included_units, i.usage_limit])).toEqual([
      [1_000_000, '0.00000000', null],
      [1, '1.12345678', null],
    ]);
  });

  it('the console answers what the API answers, from the same function', async () => {
    const subscription = await running(3);
    // an added item too: both doors show its provisional id (the console encodes it with the schema)
    const items = [{ id: subscription.items[0]!.id, quantity: 1 }, { product_id: apiCalls }];
    for (let attempt = 0; ; attempt++) {
      const viaApi = (await post(subscription.id, { items, preview: true })).json()
        .data as SubscriptionChange;
      const result = await run(
        'subscription',
        'update',
        '--id',
        String(subscription.id),
        '--org',
        String(orgA.orgId),
        '--items',
        JSON.stringify(items),
        '--preview',
      );
      expect(result.code, result.stderr).toBe(0);
      const viaConsole = result.json() as SubscriptionChange;
      if (viaConsole.effective_at !== viaApi.effective_at && attempt < 3) continue;
      const { updated_at: _a, ...apiSubscription } = viaApi.subscription;
      const { updated_at: _c, ...consoleSubscription } = viaConsole.subscription;
      expect({ ...viaConsole, subscription: consoleSubscription }).toEqual({
        ...viaApi,
        subscription: apiSubscription,
      });
      expect(viaConsole.proration_lines).toHaveLength(2);
      expect(viaConsole.subscription.items.map((item) => item.id)).toEqual([subscription.items[0]!.id, -1]);
      break;
    }
    const refused = await run(
      'subscription',
      'update',
      '--id',
      String(subscription.id),
      '--items',
      '[{"id":1,"quantity":0}]',
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('items');
  });
});
