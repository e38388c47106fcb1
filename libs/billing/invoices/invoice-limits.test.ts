import { describe, expect, it } from 'vitest';
import { parseMoney } from '../../money/index.js';
import type { BillableItem } from '../pricing/index.js';
import {
  fitsAnInvoice,
  fixedChargeProblems,
  LARGEST_PRE_TAX,
  productPriceProblems,
} from './invoice-limits.js';

const item = (overrides: Partial<BillableItem>): BillableItem => ({
  subscription_item_id: 1,
  product_id: 1,
  product_name: 'Seats',
  unit_label: 'seat',
  currency: 'CAD',
  pricing_type: 'recurring',
  usage_type: 'licensed',
  quantity: 1,
  unit_price: '10.00000000',
  included_units: '0',
  pricing: { pricing_model: 'per_unit', pricing_scheme: 'linear', pricing_mode: null, tiers: [] },
  ...overrides,
});

describe('what an invoice can hold', () => {
  it('leaves room for the highest tax under the largest stored amount, to the last digit', () => {
    const largest = parseMoney(LARGEST_PRE_TAX);
    expect(fitsAnInvoice(largest)).toBe(true);
    expect(fitsAnInvoice(largest + 1n)).toBe(false);
    expect(LARGEST_PRE_TAX).toBe('869565217391.30434781');
  });

  it('refuses a product price whose one unit could not be invoiced, naming the field or the tier', () => {
    expect(productPriceProblems({ unit_price: '900000000000' })).toEqual([
      expect.objectContaining({ field: 'unit_price', code: 'out_of_range' }),
    ]);
    expect(productPriceProblems({ unit_price: '869565217391.30434781' })).toEqual([]);
    expect(
      productPriceProblems({
        unit_price: '0',
        tiers: [
          { unit_price: '1', flat_fee: '0' },
          { unit_price: '500000000000', flat_fee: '500000000000' },
        ],
      }).map((p) => p.field),
    ).toEqual(['tiers.1.unit_price']);
  });

  it('refuses licensed quantities whose charge could not be invoiced, each and together; usage is not judged', () => {
    const million = item({ quantity: 1_000_000, unit_price: '1000000.00000000' });
    expect(fixedChargeProblems([million]).map((p) => p.field)).toEqual(['items.0.quantity']);
    const half = item({ quantity: 1, unit_price: '500000000000.00000000' });
    expect(fixedChargeProblems([half]).map((p) => p.field)).toEqual([]);
    expect(fixedChargeProblems([half, half]).map((p) => p.field)).toEqual(['items']);
    const metered = item({
      usage_type: 'metered',
      pricing_type: 'usage',
      unit_price: '800000000000.00000000',
    });
    expect(fixedChargeProblems([half, metered])).toEqual([]);
  });

  it('judges a one-time item at its quantity too, alone and with the others', () => {
    const setup = (quantity: number) =>
      item({ pricing_type: 'one_time', quantity, unit_price: '500000000000.00000000' });
    expect(fixedChargeProblems([setup(2)]).map((p) => p.field)).toEqual(['items.0.quantity']);
    expect(fixedChargeProblems([setup(1)])).toEqual([]);
    const half = item({ quantity: 1, unit_price: '500000000000.00000000' });
    expect(fixedChargeProblems([half, setup(1)]).map((p) => p.field)).toEqual(['items']);
  });
});
