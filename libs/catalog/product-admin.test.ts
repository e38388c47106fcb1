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

describe('a new product', () => {
  it('takes each text field up to its limit and refuses one character past it', () => {
    const limits: [string, number][] = [
      ['name', 255],
      ['sku', 100],
      ['description', 2000],
      ['unit_label', 50],
      ['external_id', 255],
    ];
    for (const [field, limit] of limits) {
      expect(problemsOf({ [field]: 'x'.repeat(limit) }), field).toEqual([]);
      expect(
        problemsOf({ [field]: 'x'.repeat(limit + 1) }).map(([name]) => name),
        field,
      ).toEqual([field]);
    }
  });

  it('refuses an empty name or unit label', () => {
    expect(problemsOf({ name: '' }).map(([field]) => field)).toEqual(['name']);
    expect(problemsOf({ unit_label: '' }).map(([field]) => field)).toEqual(['unit_label']);
  });

  it('takes up to 50 tiers and refuses 51', () => {
    const tiers = (count: number) =>
      Array.from({ length: count }, (_, i) => ({
        up_to: i === count - 1 ? null : String(i + 1),
        unit_price: '1',
      }));
    expect(problemsOf({ pricing_mode: 'graduated', tiers: tiers(50) })).toEqual([]);
    expect(problemsOf({ pricing_mode: 'graduated', tiers: tiers(51) }).map(([field]) => field)).toEqual([
      'tiers',
    ]);
  });

  it('fills in what is left out: a free, active, monthly, per-unit standard product', () => {
    const product = NewProduct.parse(
      { name: 'P', pricing_type: 'recurring', pricing_mode: 'flat', tiers: [{ up_to: null }] },
      ZOD_PARSE_OPTIONS,
    );
    expect(product).toEqual({
      name: 'P',
      pricing_type: 'recurring',
      pricing_mode: 'flat',
      tiers: [{ up_to: null, unit_price: '0', flat_fee: '0' }],
      unit_price: '0',
      pricing_model: 'per_unit',
      product_type: 'standard',
      default_billing_period: 'monthly',
      sku: '',
      description: '',
      unit_label: 'unit',
      external_id: '',
      is_active: true,
      metadata: {},
    });
  });
});
