import { describe, expect, it } from 'vitest';
import {
  billableUsage,
  type PriceTier,
  type ProductPricing,
  priceQuantity,
  tierProblems,
} from './pricing.js';

const linear = (model: 'per_unit' | 'flat_fee', unitPrice: string): ProductPricing => ({
  pricing_model: model,
  pricing_scheme: 'linear',
  pricing_mode: null,
  unit_price: unitPrice,
  tiers: [],
});
const tiered = (mode: 'flat' | 'volume' | 'graduated', tiers: PriceTier[]): ProductPricing => ({
  pricing_model: 'per_unit',
  pricing_scheme: 'tiered',
  pricing_mode: mode,
  unit_price: '0',
  tiers,
});
const tier = (up_to: string | null, unit_price: string, flat_fee = '0'): PriceTier => ({
  up_to,
  unit_price,
  flat_fee,
});

// 1-100 at 1.00, 101+ at 0.50
const twoTiers = [tier('100', '1.00'), tier(null, '0.50')];

describe('linear prices', () => {
  it('per_unit: quantity x unit price, exact', () => {
    expect(priceQuantity(linear('per_unit', '19.99'), '3')).toEqual({
      quantity: '3.0000',
      unit_price: '19.99000000',
      amount: '59.97000000',
    });
    expect(priceQuantity(linear('per_unit', '0.1'), '0.2').amount).toBe('0.02000000');
  });

  it('per_unit: zero quantity costs nothing', () => {
    expect(priceQuantity(linear('per_unit', '5'), '0').amount).toBe('0.00000000');
  });

  it('refuses a negative quantity, however small', () => {
    expect(() => priceQuantity(linear('per_unit', '5'), '-0.0001')).toThrow(RangeError);
    expect(() => priceQuantity(linear('per_unit', '5'), '-3')).toThrow(RangeError);
  });

  it('flat_fee: one fee per period whatever the quantity, nothing when nothing is used', () => {
    expect(priceQuantity(linear('flat_fee', '250'), '17')).toEqual({
      quantity: '1.0000',
      unit_price: '250.00000000',
      amount: '250.00000000',
    });
    expect(priceQuantity(linear('flat_fee', '250'), '0').amount).toBe('0.00000000');
  });

  it('flat_fee: the smallest quantity shown is a use and costs the whole fee', () => {
    expect(priceQuantity(linear('flat_fee', '250'), '0.0001')).toEqual({
      quantity: '1.0000',
      unit_price: '250.00000000',
      amount: '250.00000000',
    });
    // 0.00005 shows as 0.0000 (half to even): nothing was used
    expect(priceQuantity(linear('flat_fee', '250'), '0.00005').amount).toBe('0.00000000');
  });
});

describe('graduated tiers', () => {
  it('prices each tier at its own rate: 250 units = 100 x 1.00 + 150 x 0.50 = 175', () => {
    expect(priceQuantity(tiered('graduated', twoTiers), '250')).toEqual({
      quantity: '250.0000',
      unit_price: '0.70000000',
      amount: '175.00000000',
    });
  });

  it('at, just below and just above the boundary', () => {
    expect(priceQuantity(tiered('graduated', twoTiers), '100').amount).toBe('100.00000000');
    expect(priceQuantity(tiered('graduated', twoTiers), '99').amount).toBe('99.00000000');
    expect(priceQuantity(tiered('graduated', twoTiers), '101').amount).toBe('100.50000000');
    expect(priceQuantity(tiered('graduated', twoTiers), '100.5').amount).toBe('100.25000000');
  });

  it('adds the flat fee of every tier entered', () => {
    const withFees = [tier('10', '2', '5'), tier('20', '1', '3'), tier(null, '0.5', '1')];
    expect(priceQuantity(tiered('graduated', withFees), '10').amount).toBe('25.00000000');
    expect(priceQuantity(tiered('graduated', withFees), '15').amount).toBe('33.00000000');
    expect(priceQuantity(tiered('graduated', withFees), '30').amount).toBe('44.00000000');
  });
});

describe('volume tiers', () => {
  it('prices every unit at the rate of the tier the total falls in', () => {
    expect(priceQuantity(tiered('volume', twoTiers), '100').amount).toBe('100.00000000');
    expect(priceQuantity(tiered('volume', twoTiers), '101').amount).toBe('50.50000000');
    expect(priceQuantity(tiered('volume', twoTiers), '250').amount).toBe('125.00000000');
    expect(priceQuantity(tiered('volume', twoTiers), '1').amount).toBe('1.00000000');
  });

  it('adds the flat fee of that tier only', () => {
    const withFees = [tier('100', '1', '10'), tier(null, '0.5', '20')];
    expect(priceQuantity(tiered('volume', withFees), '100').amount).toBe('110.00000000');
    expect(priceQuantity(tiered('volume', withFees), '200').amount).toBe('120.00000000');
  });
});

describe('flat (stair-step) tiers', () => {
  const steps = [tier('10', '0', '49'), tier('100', '0', '199'), tier(null, '0', '499')];
  it('charges the flat fee of the tier the quantity falls in', () => {
    expect(priceQuantity(tiered('flat', steps), '1').amount).toBe('49.00000000');
    expect(priceQuantity(tiered('flat', steps), '10').amount).toBe('49.00000000');
    expect(priceQuantity(tiered('flat', steps), '10.0001').amount).toBe('199.00000000');
    expect(priceQuantity(tiered('flat', steps), '100').amount).toBe('199.00000000');
    expect(priceQuantity(tiered('flat', steps), '5000').amount).toBe('499.00000000');
  });

  it('charges nothing for zero usage in any tiered mode', () => {
    for (const mode of ['flat', 'volume', 'graduated'] as const) {
      expect(priceQuantity(tiered(mode, steps), '0').amount, mode).toBe('0.00000000');
    }
  });
});

describe('rounding', () => {
  it('keeps quantities to 4 digits (half-even) and prices the shown quantity', () => {
    // 2.00005 -> 2.0000 (half to even), 2.00015 -> 2.0002
    expect(priceQuantity(linear('per_unit', '10'), '2.00005')).toMatchObject({
      quantity: '2.0000',
      amount: '20.00000000',
    });
    expect(priceQuantity(linear('per_unit', '10'), '2.00015').quantity).toBe('2.0002');
  });

  it('rounds the line total half-even at 8 digits', () => {
    // 0.0001 x 0.00000005 = 0.000000000005 -> 0
    expect(priceQuantity(linear('per_unit', '0.00000005'), '0.0001').amount).toBe('0.00000000');
    // x.5e-8 goes to the even neighbour: 1.5 -> 2, 2.5 -> 2, 3.5 -> 4 (in units of 1e-8)
    expect(priceQuantity(linear('per_unit', '0.00000001'), '1.5').amount).toBe('0.00000002');
    expect(priceQuantity(linear('per_unit', '0.00000001'), '2.5').amount).toBe('0.00000002');
    expect(priceQuantity(linear('per_unit', '0.00000001'), '3.5').amount).toBe('0.00000004');
  });

  it('rounds a tiered line total half-even at 8 digits too', () => {
    // docs/decisions.md, "Pricing rounds once, at the end": 0.0001 x 0.00005 = 0.000000005, a half
    // of 1e-8, goes to the even 0; 0.0003 x 0.00005 = 0.000000015 to 2e-8
    const cheap = [tier(null, '0.00005')];
    for (const mode of ['volume', 'graduated'] as const) {
      expect(priceQuantity(tiered(mode, cheap), '0.0001').amount, mode).toBe('0.00000000');
      expect(priceQuantity(tiered(mode, cheap), '0.0003').amount, mode).toBe('0.00000002');
    }
  });

  it('shows the effective unit price of a tiered line rounded half-even', () => {
    // 100 x 1 + 200 x 0.5 = 200 over 300 units = 0.666666666... -> 0.66666667
    expect(priceQuantity(tiered('graduated', twoTiers), '300').unit_price).toBe('0.66666667');
  });
});

describe('included units', () => {
  it('bills only usage above the included units, never below zero', () => {
    expect(billableUsage('1500', '1000')).toBe('500.00000000');
    expect(billableUsage('999.5', '1000')).toBe('0.00000000');
    expect(billableUsage('1000', '1000')).toBe('0.00000000');
    expect(billableUsage('0.12345678', '0')).toBe('0.12345678');
    // at the usage scale, 8 digits: included units are not first rounded to the 4 the invoice shows
    expect(billableUsage('1.00015', '0.00015')).toBe('1.00000000');
    expect(billableUsage('0.00015', '0.00014999')).toBe('0.00000001');
    // beyond 8 digits both sides round half-even to the usage scale rather than being refused
    expect(billableUsage('2.000000015', '1')).toBe('1.00000002');
    expect(billableUsage('2', '0.000000005')).toBe('2.00000000');
  });

  it('combines with tiers: 1,250 used, 1,000 included, graduated -> 250 billable = 175', () => {
    const billable = billableUsage('1250.00000000', '1000.00000000');
    expect(priceQuantity(tiered('graduated', twoTiers), billable).amount).toBe('175.00000000');
  });
});

describe('tier validation', () => {
  it('accepts ascending bounds ending open-ended', () => {
    expect(tierProblems(twoTiers)).toEqual([]);
    expect(tierProblems([tier(null, '1')])).toEqual([]);
  });

  it('refuses no tiers, a closed last tier, an open middle tier and non-increasing bounds', () => {
    expect(tierProblems([])).toHaveLength(1);
    expect(tierProblems([tier('10', '1')])[0]!.message).toMatch(/last tier must be open-ended/);
    expect(tierProblems([tier(null, '1'), tier(null, '1')])[0]!.message).toMatch(/Only the last tier/);
    expect(tierProblems([tier('10', '1'), tier('10', '1'), tier(null, '1')])[0]!.message).toMatch(
      /strictly increasing/,
    );
    // a first bound of 0 (or below) prices no unit: bounds must be positive
    expect(tierProblems([tier('0', '1'), tier(null, '1')])).toEqual([
      { index: 0, field: 'up_to', message: 'Tier bounds must be positive and strictly increasing.' },
    ]);
    expect(tierProblems([tier('-5', '1'), tier(null, '1')])).toHaveLength(1);
    expect(tierProblems([tier('0.00000001', '1'), tier(null, '1')])).toEqual([]);
  });
});
