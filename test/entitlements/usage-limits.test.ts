import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '../../libs/customers/index.js';
import { ApiError } from '../../libs/errors/index.js';
import { CreateCustomer, type Subscription } from '../../libs/schemas/index.js';
import { createSubscription, type NewSubscription } from '../../libs/subscriptions/index.js';
import { productIn } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { consoleEnv, inProcessConsole } from '../helpers/console.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

/*
 * `usage_limit` on metered items (entitlements): set when a subscription is created and by its
 * changes, shown on every item read, refused per field on a licensed item, negative or not a number.
 */

let api: TestApi;
let org: TestOrg;
let seats: number;
let apiCalls: number;
let customerId: number;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  const db = api.platform.db;
  seats = await productIn(db, org.orgId, { name: 'Seats', unit_price: '10.00', pricing_type: 'recurring' });
  apiCalls = await productIn(db, org.orgId, { name: 'API calls', unit_price: '0.01', pricing_type: 'usage' });
  customerId = (
    await createCustomer(
      db,
      org.orgId,
      CreateCustomer.parse({ name: 'Acme', country: 'CA', state_province: 'ON' }),
    )
  ).id;
});
afterAll(() => api?.close());

function create(items: NewSubscription['items']) {
  return api.platform.db.transaction((tx) =>
    createSubscription(tx, org.orgId, { customer_id: customerId, items }),
  );
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const read = async (id: number) =>
  (await api.request({ method: 'GET', path: `/subscriptions/${id}`, key: org.apiKey })).json()
    .data as Subscription;
const change = (id: number, payload: object) =>
  api.request({ method: 'POST', path: `/subscriptions/${id}/changes`, key: org.apiKey, payload });

describe('usage_limit on subscription create', () => {
  it('is stored exactly on a metered item and shown on every read; a licensed item shows null', async () => {
    const created = await create([
      { product_id: seats, quantity: 2 },
      { product_id: apiCalls, usage_limit: '1000.5' },
    ]);
    expect(created.items.map((item) => item.usage_limit)).toEqual([null, '1000.50000000']);
    const shown = await read(created.id);
    expect(shown.items.map((item) => item.usage_limit)).toEqual([null, '1000.50000000']);
    const listed = await api.request({
      method: 'GET',
      path: `/subscriptions?customer_id=${customerId}`,
      key: org.apiKey,
    });
    const inList = (listed.json().data as Subscription[]).find(
      (subscription) => subscription.id === created.id,
    )!;
    expect(inList.items[1]!.usage_limit).toBe('1000.50000000');
    // a whole JSON number is a decimal too; 0 is a limit (nothing allowed), not "none"
    const zero = await create([{ product_id: apiCalls, usage_limit: 0 as unknown as string }]);
    expect(zero.items[0]!.usage_limit).toBe('0.00000000');
  });

  it('refuses, per field, a limit on a licensed item, a negative one and one that is no number', async () => {
    const licensed = await refusal(
      create([{ product_id: seats, usage_limit: '10' }, { product_id: apiCalls }]),
    );
    expect(licensed.details).toEqual([expect.objectContaining({ field: 'items.0.usage_limit' })]);
    for (const bad of ['-1', 'lots', '1.123456789', 2.5]) {
      const error = await refusal(create([{ product_id: apiCalls, usage_limit: bad as string }]));
      expect(error.code).toBe('VALIDATION_ERROR');
      expect(error.details?.map((detail) => detail.field)).toEqual(['items.0.usage_limit']);
    }
    // null is no limit, accepted on any item
    const none = await create([
      { product_id: seats, usage_limit: null },
      { product_id: apiCalls, usage_limit: null },
    ]);
    expect(none.items.map((item) => item.usage_limit)).toEqual([null, null]);
  });

  it('takes 30 whole digits and 8 decimals; refuses a bare point either side and a 31st digit', async () => {
    const widest = `${'9'.repeat(30)}.12345678`;
    const stored = await create([{ product_id: apiCalls, usage_limit: widest }]);
    expect(stored.items[0]!.usage_limit).toBe(widest);
    for (const bad of ['.5', '5.', '1'.repeat(31)]) {
      const error = await refusal(create([{ product_id: apiCalls, usage_limit: bad }]));
      expect(error.code, bad).toBe('VALIDATION_ERROR');
      expect(error.details?.map((detail) => detail.field)).toEqual(['items.0.usage_limit']);
    }
  });
});

describe('usage_limit on subscription changes', () => {
  it('sets, keeps (when left out) and clears a limit, charging nothing for it', async () => {
    const created = await create([{ product_id: seats, quantity: 1 }, { product_id: apiCalls }]);
    const [seat, calls] = created.items;
    const set = await change(created.id, {
      items: [{ id: seat!.id }, { id: calls!.id, usage_limit: '500' }],
    });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json().data.subscription.items[1].usage_limit).toBe('500.00000000');
    expect(set.json().data.proration_lines).toEqual([]);
    expect((await read(created.id)).items[1]!.usage_limit).toBe('500.00000000');

    // left out: kept, also when another term of the item changes
    const kept = await change(created.id, {
      items: [
        { id: seat!.id, quantity: 3 },
        { id: calls!.id, included_units: '10' },
      ],
    });
    expect(kept.statusCode, kept.body).toBe(200);
    expect((await read(created.id)).items.map((item) => [item.quantity, item.usage_limit])).toEqual([
      [3, null],
      [1, '500.00000000'],
    ]);

    const cleared = await change(created.id, {
      items: [{ id: seat!.id }, { id: calls!.id, usage_limit: null }],
    });
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect((await read(created.id)).items[1]!.usage_limit).toBeNull();

    // an added metered item with its limit
    const added = await change(created.id, {
      items: [{ id: seat!.id }, { id: calls!.id }, { product_id: apiCalls, usage_limit: '7.25' }],
    });
    expect(added.statusCode, added.body).toBe(200);
    expect((await read(created.id)).items.map((item) => item.usage_limit)).toEqual([
      null,
      null,
      '7.25000000',
    ]);
  });

  it('a change for the period end shows the limit in pending_change', async () => {
    const created = await create([{ product_id: apiCalls, usage_limit: '5' }]);
    const item = created.items[0]!;
    const scheduled = await change(created.id, {
      items: [{ id: item.id, usage_limit: '9' }],
      effective: 'period_end',
    });
    expect(scheduled.statusCode, scheduled.body).toBe(200);
    const shown = await read(created.id);
    expect(shown.items[0]!.usage_limit).toBe('5.00000000');
    expect(shown.pending_change!.items[0]!.usage_limit).toBe('9.00000000');
  });

  it('refuses a bad limit per field: licensed item, negative, not a number', async () => {
    const created = await create([{ product_id: seats, quantity: 1 }, { product_id: apiCalls }]);
    const [seat, calls] = created.items;
    const licensed = await change(created.id, {
      items: [{ id: seat!.id, usage_limit: '3' }, { id: calls!.id }],
    });
    expect(licensed.statusCode).toBe(422);
    expect(licensed.json().details).toEqual([expect.objectContaining({ field: 'items.0.usage_limit' })]);
    const added = await change(created.id, {
      items: [{ id: seat!.id }, { id: calls!.id }, { product_id: seats, usage_limit: '1' }],
    });
    expect(added.statusCode).toBe(422);
    expect(added.json().details).toEqual([expect.objectContaining({ field: 'items.2.usage_limit' })]);
    for (const bad of ['-5', 'many', 1.5, true]) {
      const response = await change(created.id, {
        items: [{ id: seat!.id }, { id: calls!.id, usage_limit: bad }],
      });
      expect(response.statusCode, String(bad)).toBe(422);
      expect(response.json().details.map((detail: { field: string }) => detail.field)).toEqual([
        'items.1.usage_limit',
      ]);
    }
    expect((await read(created.id)).items[1]!.usage_limit).toBeNull();
  });
});

describe('the console', () => {
  const run = inProcessConsole(() => consoleEnv(api.database.url));

  it('creates a subscription with a usage limit and lists the entitlements', async () => {
    const created = await run(
      'subscription',
      'create',
      '--org',
      String(org.orgId),
      '--customer',
      String(customerId),
      '--items',
      JSON.stringify([{ product_id: apiCalls, usage_limit: '3' }]),
    );
    expect(created.code, created.stderr).toBe(0);
    const item = created.json().items[0];
    expect(item.usage_limit).toBe('3.00000000');
    const refused = await run(
      'subscription',
      'create',
      '--org',
      String(org.orgId),
      '--customer',
      String(customerId),
      '--items',
      JSON.stringify([{ product_id: seats, usage_limit: '3' }]),
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('usage_limit');
    const listed = await run('entitlement', 'list', '--customer', String(customerId));
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json().data).toContainEqual(
      expect.objectContaining({
        subscription_item_id: item.id,
        product_id: apiCalls,
        has_access: true,
        usage_limit: '3.00000000',
        used: '0.00000000',
        remaining: '3.00000000',
      }),
    );
  });
});
