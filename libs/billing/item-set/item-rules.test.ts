import { describe, expect, it } from 'vitest';
import {
  includedUnitsProblems,
  meteredQuantityProblems,
  productProblems,
  type RuledProduct,
  usageLimitProblems,
} from './item-rules.js';

/*
 * The rules every item of a subscription obeys (creating a subscription and changing its items
 * check them with these functions): each answers the problems it finds, none when the item passes.
 */

const monthlyCad = { currency: 'CAD', billing_period: 'monthly' } as const;

const ruled = (overrides: Partial<RuledProduct> = {}): RuledProduct => ({
  id: 30,
  pricing_type: 'recurring',
  currency: 'CAD',
  is_active: true,
  default_billing_period: 'monthly',
  ...overrides,
});

const fields = (problems: { field: string }[]) => problems.map((problem) => problem.field);

describe('productProblems', () => {
  it('refuses a usage-priced product of another billing period, as a recurring one; a one-time one is charged once', () => {
    const annually = { default_billing_period: 'annually' } as const;
    expect(
      productProblems(ruled({ pricing_type: 'usage', ...annually }), monthlyCad, 'items.1', {
        checkActive: true,
      }),
    ).toEqual([
      {
        field: 'items.1.product_id',
        message: 'Product 30 is priced annually; this subscription is billed monthly.',
        code: 'invalid_value',
      },
    ]);
    expect(fields(productProblems(ruled(annually), monthlyCad, 'items.1', { checkActive: true }))).toEqual([
      'items.1.product_id',
    ]);
    expect(
      productProblems(ruled({ pricing_type: 'one_time', ...annually }), monthlyCad, 'items.1', {
        checkActive: true,
      }),
    ).toEqual([]);
  });
});

describe('includedUnitsProblems', () => {
  it.each(['0.5', '0.9', '9', '0.00000001', '10'])(
    'refuses included units of %s on a licensed item: any digit above zero is an allowance',
    (included) => {
      expect(includedUnitsProblems(false, { included_units: included }, 'items.0')).toEqual([
        {
          field: 'items.0.included_units',
          message: 'Only metered items (usage-priced products) have included units.',
          code: 'invalid_value',
        },
      ]);
      expect(includedUnitsProblems(true, { included_units: included }, 'items.0')).toEqual([]);
    },
  );

  it.each(['0', '0.00000000', '00.0'])(
    'accepts included units of %s (none) on a licensed item',
    (included) => {
      expect(includedUnitsProblems(false, { included_units: included }, 'items.0')).toEqual([]);
    },
  );
});

describe('usageLimitProblems', () => {
  it('refuses a usage limit of zero on a licensed item: zero is a limit, only null is none', () => {
    expect(fields(usageLimitProblems(false, { usage_limit: '0' }, 'items.2'))).toEqual([
      'items.2.usage_limit',
    ]);
    expect(usageLimitProblems(false, { usage_limit: null }, 'items.2')).toEqual([]);
    expect(usageLimitProblems(true, { usage_limit: '0' }, 'items.2')).toEqual([]);
  });
});

describe('meteredQuantityProblems', () => {
  it('refuses any quantity given to a metered item, zero included: its usage is its quantity', () => {
    expect(meteredQuantityProblems('Item 8', true, { quantity: 0 }, 'items.1')).toEqual([
      {
        field: 'items.1.quantity',
        message: 'Item 8 is usage-priced: its usage is its quantity.',
        code: 'invalid_value',
      },
    ]);
    expect(meteredQuantityProblems('Item 8', true, {}, 'items.1')).toEqual([]);
    expect(meteredQuantityProblems('Item 7', false, { quantity: 0 }, 'items.1')).toEqual([]);
  });
});
