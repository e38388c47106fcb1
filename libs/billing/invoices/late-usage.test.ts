import { describe, expect, it } from 'vitest';
import type { BillableItem } from '../pricing/index.js';
import { type BilledPeriod, lateUsageLine, periodLabel } from './late-usage.js';

const item: BillableItem = {
  subscription_item_id: 7,
  product_id: 3,
  product_name: 'API calls',
  unit_label: 'calls',
  currency: 'CAD',
  pricing_type: 'usage',
  usage_type: 'metered',
  quantity: 1,
  unit_price: '0',
  included_units: '0',
  pricing: {
    pricing_model: 'per_unit',
    pricing_scheme: 'tiered',
    pricing_mode: 'graduated',
    tiers: [
      { up_to: '100', unit_price: '1.00', flat_fee: '0' },
      { up_to: null, unit_price: '0.50', flat_fee: '0' },
    ],
  },
};

const billed = (period_quantity: string, late_quantity = '0', included_units = '0'): BilledPeriod => ({
  org_id: 1,
  subscription_id: 2,
  subscription_item_id: 7,
  period_start: new Date('2026-10-01T00:00:00Z'),
  period_end: new Date('2026-11-01T00:00:00Z'),
  window_start: new Date('2026-10-01T00:00:00Z'),
  window_end: new Date('2026-11-01T00:00:00Z'),
  invoice_id: 'x',
  invoice_status: 'POSTED',
  period_quantity,
  late_quantity,
  included_units,
  unit_price: '0',
});

describe('late usage lines', () => {
  it('continue the tiers from what the period billed, its own late lines included', () => {
    expect(lateUsageLine(item, billed('80'), '120', 'CAD')).toMatchObject({
      description: 'API calls: late usage, Oct 1-31',
      quantity: '40.0000',
      amount: '30.00000000',
      unit_price: '0.75000000',
      late_quantity: '40.00000000',
    });
    // 80 on the invoice and 40 late since: 10 more are late, at 0.50 each
    expect(lateUsageLine(item, billed('80', '40'), '130', 'CAD')).toMatchObject({
      quantity: '10.0000',
      late_quantity: '10.00000000',
      unit_price: '0.50000000',
      amount: '5.00000000',
    });
  });

  it('show the average unit price of the late quantity, rounded half-even to 8 digits', () => {
    // 99 billed, 102 counted: 1 call at 1.00 and 2 at 0.50 = 2.00 for 3, 0.666666666... -> 0.66666667
    expect(lateUsageLine(item, billed('99'), '102', 'CAD')).toMatchObject({
      quantity: '3.0000',
      amount: '2.00000000',
      unit_price: '0.66666667',
    });
  });

  it('carry included units on: nothing until the late usage passes them', () => {
    expect(lateUsageLine(item, billed('30', '0', '50'), '45', 'CAD')).toMatchObject({ amount: '0.00000000' });
    expect(lateUsageLine(item, billed('30', '0', '50'), '60', 'CAD')).toMatchObject({
      amount: '10.00000000',
    });
  });

  it('bill in the minor unit: the price of all counted less the price of what was billed, each rounded', () => {
    // docs/decisions.md, "Payable amounts": line amounts are whole minor units. At 0.003 a call,
    // 10 calls billed 0.03 and 11 counted cost 0.033 -> 0.03: nothing more, not 0.003
    const cheap: BillableItem = {
      ...item,
      pricing: { pricing_model: 'per_unit', pricing_scheme: 'linear', pricing_mode: null, tiers: [] },
    };
    const at = (unit_price: string, quantity: string) => ({ ...billed(quantity), unit_price });
    expect(lateUsageLine(cheap, at('0.003', '10'), '11', 'CAD')?.amount).toBe('0.00000000');
    // 12 cost 0.036 -> 0.04: 0.01 more; in JPY at 0.4 yen, 10 billed 4 and 12 cost 4.8 -> 5: 1 yen
    expect(lateUsageLine(cheap, at('0.003', '10'), '12', 'CAD')?.amount).toBe('0.01000000');
    expect(lateUsageLine(cheap, at('0.4', '10'), '12', 'JPY')?.amount).toBe('1.00000000');
  });

  it('show the late quantity rounded half-even to 4 digits, and no unit price for a quantity shown as 0', () => {
    const linear: BillableItem = {
      ...item,
      pricing: { pricing_model: 'per_unit', pricing_scheme: 'linear', pricing_mode: null, tiers: [] },
    };
    // 0.00015 late: shown 0.0002 (half to even), the exact 0.00015 kept for what is billed
    expect(lateUsageLine(linear, { ...billed('10'), unit_price: '100' }, '10.00015', 'CAD')).toMatchObject({
      quantity: '0.0002',
      late_quantity: '0.00015000',
      amount: '0.02000000',
    });
    // 0.00004 late shows as 0.0000 and is priced as shown: nothing, at a unit price of 0
    expect(lateUsageLine(linear, { ...billed('10'), unit_price: '1000' }, '10.00004', 'CAD')).toMatchObject({
      quantity: '0.0000',
      unit_price: '0.00000000',
      amount: '0.00000000',
    });
    // 10.00005 billed (priced as 10.0000, half to even) and 10.00009 counted (priced as 10.0001):
    // 0.00004 late shows as 0.0000 yet costs 0.01 at 100 a call; still no unit price, not 0.01 a unit
    expect(
      lateUsageLine(linear, { ...billed('10.00005'), unit_price: '100' }, '10.00009', 'CAD'),
    ).toMatchObject({
      quantity: '0.0000',
      unit_price: '0.00000000',
      amount: '0.01000000',
    });
  });

  it("span the item's whole period, even when its usage counted for part of it", () => {
    const partial = { ...billed('80'), window_start: new Date('2026-10-11T00:00:00Z') };
    expect(lateUsageLine(item, partial, '90', 'CAD')).toMatchObject({
      period_start: '2026-10-01T00:00:00.000Z',
      period_end: '2026-11-01T00:00:00.000Z',
    });
  });

  it("span the item's whole period when its usage stopped counting before the period end (removed)", () => {
    const removed = { ...billed('80'), window_end: new Date('2026-10-21T00:00:00Z') };
    expect(lateUsageLine(item, removed, '90', 'CAD')).toMatchObject({
      description: 'API calls: late usage, Oct 1-31',
      period_start: '2026-10-01T00:00:00.000Z',
      period_end: '2026-11-01T00:00:00.000Z',
    });
  });

  it('bill the item and its product: the subscription item id and the product id, each its own', () => {
    expect(lateUsageLine(item, billed('80'), '90', 'CAD')).toMatchObject({
      subscription_item_id: 7,
      product_id: 3,
    });
  });

  it('make no line when nothing more is counted than was billed (a void of a billed period)', () => {
    expect(lateUsageLine(item, billed('80', '10'), '90', 'CAD')).toBeUndefined();
    expect(lateUsageLine(item, billed('80'), '70', 'CAD')).toBeUndefined();
  });

  it("name the period by its UTC days whatever the process's time zone", () => {
    const zone = process.env.TZ;
    process.env.TZ = 'America/Vancouver'; // 2026-10-01T00:00Z is still September 30 there
    try {
      expect(periodLabel(new Date('2026-10-01T00:00:00Z'), new Date('2026-11-01T00:00:00Z'))).toBe(
        'Oct 1-31',
      );
      expect(periodLabel(new Date('2026-01-01T00:00:00Z'), new Date('2027-01-01T00:00:00Z'))).toBe(
        'Jan 1-Dec 31',
      );
    } finally {
      if (zone === undefined) Reflect.deleteProperty(process.env, 'TZ');
      else process.env.TZ = zone;
    }
  });

  it('name the period by its days', () => {
    expect(periodLabel(new Date('2026-10-01T00:00:00Z'), new Date('2026-11-01T00:00:00Z'))).toBe('Oct 1-31');
    expect(periodLabel(new Date('2026-10-15T00:00:00Z'), new Date('2026-11-15T00:00:00Z'))).toBe(
      'Oct 15-Nov 14',
    );
    expect(periodLabel(new Date('2025-12-15T00:00:00Z'), new Date('2026-01-15T00:00:00Z'))).toBe(
      'Dec 15, 2025-Jan 14, 2026',
    );
    // a quarter from the 1st spans months whose last day is past its first: Jan 1-Mar 31
    expect(periodLabel(new Date('2026-01-01T00:00:00Z'), new Date('2026-04-01T00:00:00Z'))).toBe(
      'Jan 1-Mar 31',
    );
    // December ends at midnight of the new year: its days are all in one year
    expect(periodLabel(new Date('2025-12-01T00:00:00Z'), new Date('2026-01-01T00:00:00Z'))).toBe('Dec 1-31');
    // a period that ended where it began (stopped at its start) is named by that one day
    expect(periodLabel(new Date('2026-10-15T00:00:00Z'), new Date('2026-10-15T00:00:00Z'))).toBe('Oct 15-15');
  });
});
