import { describe, expect, it } from 'vitest';
import { fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from '../errors/index.js';
import { NewProduct } from './product-admin.js';

/** [field, message] of each refusal of a new product; [] when it is taken. */
function problemsOf(input: Record<string, unknown>): [string, string][] {
  const parsed = NewProduct.safeParse({ name: 'P', pricing_type: 'usage', ...input }, ZOD_PARSE_OPTIONS);
  return parsed.success ? [] : fieldErrorsFromZod(parsed.error.issues).map((e) => [e.field, e.message]);
}

describe('a new product price', () => {
  it('is linear unless a mode, tiers or the tiered scheme is given', () => {
    expect(problemsOf({})).toEqual([]);
    expect(problemsOf({ pricing_scheme: 'tiered' })).toEqual([
      ['pricing_mode', 'A tiered price needs a pricing mode: flat, volume or graduated.'],
      ['tiers', 'A tiered price needs at least one tier.'],
    ]);
    expect(problemsOf({ pricing_mode: 'volume' })).toEqual([
      ['tiers', 'A tiered price needs at least one tier.'],
    ]);
  });

  it('refuses tiers and a mode on a linear price, each by name', () => {
    expect(
      problemsOf({
        pricing_scheme: 'linear',
        pricing_mode: 'flat',
        tiers: [{ up_to: null, unit_price: '1' }],
      }),
    ).toEqual([
      ['pricing_mode', 'Only a tiered price has a pricing mode.'],
      ['tiers', 'Only a tiered price has tiers.'],
    ]);
    expect(problemsOf({ pricing_scheme: 'linear', tiers: [] })).toEqual([]);
  });

  it('names each tier that breaks the order by its place', () => {
    expect(
      problemsOf({
        pricing_mode: 'graduated',
        tiers: [
          { up_to: '10', unit_price: '1' },
          { up_to: '10', unit_price: '1' },
          { up_to: null, unit_price: '1' },
        ],
      }),
    ).toEqual([['tiers.1.up_to', 'Tier bounds must be positive and strictly increasing.']]);
  });
});
