import { describe, expect, it } from 'vitest';
import { ApiError } from '../../errors/index.js';
import type { ChangeCatalog, ItemSetEntry } from './item-set.js';
import {
  ANALYTICS,
  calls,
  catalogOf,
  MARCH,
  ONBOARDING,
  product,
  STORAGE,
  seats,
} from './item-set-fixtures.js';
import { resolveItemSet } from './resolve-item-set.js';

const current = [seats(2), calls('1000.00000000')];
const catalog = catalogOf([ANALYTICS, ONBOARDING, STORAGE]);

function resolve(entries: ItemSetEntry[], options: { catalog?: ChangeCatalog; checkActive?: boolean } = {}) {
  return resolveItemSet(MARCH, current, entries, options.catalog ?? catalog, {
    checkActive: options.checkActive ?? true,
  });
}

/** The ApiError `resolve` throws (a test of a refusal fails when nothing is thrown). */
function refusal(entries: ItemSetEntry[], options: { catalog?: ChangeCatalog; checkActive?: boolean } = {}) {
  try {
    resolve(entries, options);
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('resolveItemSet accepted the set');
}

describe('resolveItemSet: kept items', () => {
  it('keeps an item at its quantity, or re-quantifies a licensed one', () => {
    expect(resolve([{ id: 7 }, { id: 8 }])).toEqual([
      { id: 7, product_id: 3, quantity: 2, included_units: '0.00000000' },
      { id: 8, product_id: 4, quantity: 1, included_units: '1000.00000000' },
    ]);
    expect(resolve([{ id: 7, quantity: 5 }])[0]).toEqual({
      id: 7,
      product_id: 3,
      quantity: 5,
      included_units: '0.00000000',
    });
  });

  it("changes a metered item's included units, written to 8 digits", () => {
    expect(resolve([{ id: 7 }, { id: 8, included_units: '2500.5' }])[1]).toEqual({
      id: 8,
      product_id: 4,
      quantity: 1,
      included_units: '2500.50000000',
    });
  });

  it("keeps a metered item's usage limit unless the entry sets one; null takes it away", () => {
    const limited = [seats(2), calls('1000.00000000', { usage_limit: '5000.00000000' })];
    const keepLimited = (entries: ItemSetEntry[]) =>
      resolveItemSet(MARCH, limited, entries, catalog, { checkActive: true });
    expect(keepLimited([{ id: 7 }, { id: 8 }])[1]).toMatchObject({ usage_limit: '5000.00000000' });
    expect(keepLimited([{ id: 7 }, { id: 8, usage_limit: '20' }])[1]).toMatchObject({
      usage_limit: '20.00000000',
    });
    expect(keepLimited([{ id: 7 }, { id: 8, usage_limit: null }])[1]).not.toHaveProperty('usage_limit');
  });

  it('accepts a usage limit of null (none) sent back on a licensed item', () => {
    expect(resolve([{ id: 7, usage_limit: null }, { id: 8 }])[0]).toEqual({
      id: 7,
      product_id: 3,
      quantity: 2,
      included_units: '0.00000000',
    });
    expect(refusal([{ id: 7, usage_limit: '10' }, { id: 8 }]).details?.map((d) => d.field)).toEqual([
      'items.0.usage_limit',
    ]);
  });

  it("refuses a metered item's quantity and a licensed item's included units, naming the field", () => {
    expect(
      refusal([
        { id: 7, included_units: '5' },
        { id: 8, quantity: 3 },
      ]).details,
    ).toEqual([
      {
        field: 'items.0.included_units',
        message: 'Only metered items (usage-priced products) have included units.',
        code: 'invalid_value',
      },
      {
        field: 'items.1.quantity',
        message: 'Item 8 is usage-priced: its usage is its quantity.',
        code: 'invalid_value',
      },
    ]);
  });

  it("accepts a licensed item's included units of zero, as its items show them", () => {
    expect(resolve([{ id: 7, included_units: '0.00000000' }])[0]?.included_units).toBe('0.00000000');
  });

  it('answers 404 for an item the organization does not have, 422 for one of another subscription', () => {
    const unknown = refusal([{ id: 999 }]);
    expect(unknown).toMatchObject({ status: 404, message: 'Subscription item 999 not found.' });
    const elsewhere = refusal([{ id: 7 }, { id: 55 }], {
      catalog: catalogOf([], { itemOwners: new Map([[55, 41]]) }),
    });
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.details).toEqual([
      {
        field: 'items.1.id',
        message: 'Item 55 belongs to subscription 41, not this one.',
        code: 'invalid_value',
      },
    ]);
  });

  it('answers 404 for an item of this subscription that a change removed', () => {
    // removed items are not current, and the catalog does not own them (changeCatalogColumns)
    const removed = resolveItemSet.bind(null, MARCH, [seats(2)], [{ id: 8 }], catalog, { checkActive: true });
    expect(removed).toThrow(expect.objectContaining({ status: 404 }));
  });
});

describe('resolveItemSet: added items', () => {
  it('adds a licensed item at quantity 1 or the one given, a metered one at 1 with its included units', () => {
    expect(
      resolve([
        { id: 7 },
        { product_id: ANALYTICS.id },
        { product_id: ANALYTICS.id, quantity: 4 },
        { product_id: STORAGE.id, included_units: '10' },
        { product_id: STORAGE.id },
      ]).slice(1),
    ).toEqual([
      { id: null, product_id: 20, quantity: 1, included_units: '0.00000000' },
      { id: null, product_id: 20, quantity: 4, included_units: '0.00000000' },
      { id: null, product_id: 22, quantity: 1, included_units: '10.00000000' },
      { id: null, product_id: 22, quantity: 1, included_units: '0.00000000' },
    ]);
  });

  it('adds a one-time item beside a recurring one', () => {
    expect(resolve([{ id: 7 }, { product_id: ONBOARDING.id }])[1]).toEqual({
      id: null,
      product_id: 21,
      quantity: 1,
      included_units: '0.00000000',
    });
  });

  it('answers 404 for a product the organization does not have', () => {
    expect(refusal([{ id: 7 }, { product_id: 999 }])).toMatchObject({
      status: 404,
      message: 'Product 999 not found.',
    });
  });

  it('refuses what the item rules refuse, each problem naming its field, in the order of the entries', () => {
    const others = catalogOf([
      product(30, { is_active: false }),
      product(31, { currency: 'USD' }),
      product(32, { default_billing_period: 'annually' }),
      product(33, { pricing_type: 'one_time', default_billing_period: 'annually' }),
    ]);
    const refused = refusal(
      [
        { id: 7 },
        { product_id: 30 },
        { product_id: 31 },
        { product_id: 32 },
        { product_id: 33 },
        { product_id: STORAGE.id, quantity: 2 },
        { product_id: ANALYTICS.id, included_units: '1' },
      ],
      { catalog: catalogOf([...others.products.values(), STORAGE, ANALYTICS]) },
    );
    expect(refused.status).toBe(422);
    expect(refused.details).toEqual([
      { field: 'items.1.product_id', message: 'Product 30 is not active.', code: 'invalid_value' },
      {
        field: 'items.2.product_id',
        message: 'Product 31 is priced in USD; this subscription is billed in CAD.',
        code: 'invalid_value',
      },
      {
        field: 'items.3.product_id',
        message: 'Product 32 is priced annually; this subscription is billed monthly.',
        code: 'invalid_value',
      },
      {
        field: 'items.5.quantity',
        message: 'Product 22 is usage-priced: its usage is its quantity.',
        code: 'invalid_value',
      },
      {
        field: 'items.6.included_units',
        message: 'Only metered items (usage-priced products) have included units.',
        code: 'invalid_value',
      },
    ]);
  });

  it('names a product in a currency that cannot be billed once, for its currency alone', () => {
    const refused = refusal([{ id: 7 }, { product_id: 36 }], {
      catalog: catalogOf([product(36, { currency: 'XXX' })]),
    });
    expect(refused.details).toEqual([
      {
        field: 'items.1.product_id',
        message: 'Product 36 is priced in XXX, a currency that cannot be billed.',
        code: 'invalid_value',
      },
    ]);
  });

  it("compares a product's currency with the subscription's code, blanks of a fixed-width column aside", () => {
    const padded = { ...MARCH, currency: 'CAD ' };
    expect(
      resolveItemSet(padded, current, [{ id: 7 }, { product_id: ANALYTICS.id }], catalog, {
        checkActive: true,
      }),
    ).toHaveLength(2);
  });

  it('refuses a price no invoice can hold, and an inactive product, only when asked to check', () => {
    const costly = catalogOf([
      product(34, { unit_price: '900000000000.00000000' }),
      product(35, { is_active: false }),
    ]);
    const refused = refusal([{ id: 7 }, { product_id: 34 }, { product_id: 35 }], { catalog: costly });
    expect(refused.details?.map((detail) => [detail.field, detail.code])).toEqual([
      ['items.1.product_id', 'out_of_range'],
      ['items.2.product_id', 'invalid_value'],
    ]);
    // at a scheduled change's boundary: the set was checked when it was scheduled
    expect(
      resolve([{ id: 7 }, { product_id: 34 }, { product_id: 35 }], { catalog: costly, checkActive: false }),
    ).toHaveLength(3);
  });
});

describe('resolveItemSet: the set as a whole', () => {
  it('refuses a set of one-time items alone', () => {
    expect(refusal([{ product_id: ONBOARDING.id }]).details).toEqual([
      {
        field: 'items',
        message:
          'A subscription needs at least one recurring or usage item; one-time items alone are a one-off charge.',
        code: 'invalid_value',
      },
    ]);
  });

  it('names only the entry that cannot be completed, not the set, when one entry is unknown', () => {
    const refused = refusal([{ product_id: ONBOARDING.id }, { id: 55 }], {
      catalog: catalogOf([ONBOARDING], { itemOwners: new Map([[55, 41]]) }),
    });
    expect(refused.details?.map((detail) => detail.field)).toEqual(['items.1.id']);
  });

  it('keeps a metered item as the periodic one beside one-time items', () => {
    expect(resolve([{ id: 8 }, { product_id: ONBOARDING.id }])).toHaveLength(2);
  });
});
