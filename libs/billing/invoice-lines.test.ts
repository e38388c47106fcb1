import { describe, expect, it } from 'vitest';
import { type BillableItem, buildInvoiceLines, trimDecimal } from './invoice-lines.js';
import { taxRuleFor } from './tax.js';

const linearPricing = {
  pricing_model: 'per_unit',
  pricing_scheme: 'linear',
  pricing_mode: null,
  tiers: [],
} as const;

function item(overrides: Partial<BillableItem>): BillableItem {
  return {
    subscription_item_id: 1,
    product_id: 10,
    product_name: 'Seats',
    unit_label: 'seat',
    currency: 'CAD',
    pricing_type: 'recurring',
    usage_type: 'licensed',
    quantity: 1,
    unit_price: '10.00000000',
    included_units: '0.00000000',
    pricing: linearPricing,
    ...overrides,
  };
}

const ontario = taxRuleFor({ country: 'CA', stateProvince: 'ON' }, '2026-03-01');

describe('invoice lines', () => {
  it('licensed quantity x price, metered usage above included units, tax per line', () => {
    const draft = buildInvoiceLines(
      [
        item({ subscription_item_id: 1, quantity: 3, unit_price: '19.99000000' }),
        item({
          subscription_item_id: 2,
          product_id: 11,
          product_name: 'API calls',
          unit_label: 'calls',
          pricing_type: 'usage',
          usage_type: 'metered',
          unit_price: '0.01000000',
          included_units: '1000.00000000',
        }),
      ],
      { currency: 'CAD', usage: new Map([[2, '1500.00000000']]), firstPeriod: false, taxRule: ontario },
    );
    expect(draft.lines).toEqual([
      {
        product_id: 10,
        subscription_item_id: 1,
        description: 'Seats',
        quantity: '3.0000',
        unit_price: '19.99000000',
        line_total_pre_tax: '59.97000000',
        tax_amount: '7.79610000',
        tax_type: 'HST',
      },
      {
        product_id: 11,
        subscription_item_id: 2,
        description: 'API calls (usage: 1500 calls, 1000 included)',
        quantity: '500.0000',
        unit_price: '0.01000000',
        line_total_pre_tax: '5.00000000',
        tax_amount: '0.65000000',
        tax_type: 'HST',
      },
    ]);
    expect(draft).toMatchObject({ subtotal: '64.97000000', tax_amount: '8.44610000', total: '73.41610000' });
  });

  it('bills a metered item without usage at zero and a one-time item only on the first period', () => {
    const items = [
      item({
        subscription_item_id: 1,
        pricing_type: 'one_time',
        product_name: 'Setup',
        unit_price: '99.00000000',
      }),
      item({
        subscription_item_id: 2,
        pricing_type: 'usage',
        usage_type: 'metered',
        product_name: 'Storage',
      }),
    ];
    const first = buildInvoiceLines(items, {
      currency: 'CAD',
      usage: new Map(),
      firstPeriod: true,
      taxRule: ontario,
    });
    expect(first.lines.map((l) => [l.description, l.line_total_pre_tax])).toEqual([
      ['Setup', '99.00000000'],
      ['Storage (usage: 0 seat)', '0.00000000'],
    ]);
    const later = buildInvoiceLines(items, {
      currency: 'CAD',
      usage: new Map(),
      firstPeriod: false,
      taxRule: ontario,
    });
    expect(later.lines.map((l) => l.description)).toEqual(['Storage (usage: 0 seat)']);
    expect(later.total).toBe('0.00000000');
  });

  it('records EXEMPT lines for a tax-exempt customer and no tax type outside CA/US', () => {
    const exempt = buildInvoiceLines([item({})], {
      currency: 'CAD',
      usage: new Map(),
      firstPeriod: false,
      taxRule: taxRuleFor({ country: 'CA', stateProvince: 'QC', taxExempt: true }),
    });
    expect(exempt.lines[0]).toMatchObject({ tax_type: 'EXEMPT', tax_amount: '0.00000000' });
    const quebec = buildInvoiceLines([item({})], {
      currency: 'CAD',
      usage: new Map(),
      firstPeriod: false,
      taxRule: taxRuleFor({ country: 'CA', stateProvince: 'QC' }),
    });
    expect(quebec.lines[0]).toMatchObject({ tax_type: 'GST_QST', tax_amount: '1.49750000' });
  });

  it('never mixes currencies on one invoice', () => {
    expect(() =>
      buildInvoiceLines([item({ currency: 'USD' })], {
        currency: 'CAD',
        usage: new Map(),
        firstPeriod: false,
        taxRule: ontario,
      }),
    ).toThrow(/priced in USD, the invoice in CAD/);
  });

  it('refuses by name a line its columns cannot store, not with a bare "numeric field overflow"', () => {
    const metered = { pricing_type: 'usage', usage_type: 'metered', product_name: 'Events' } as const;
    // 2e16 events at 0.00000001 is a bill of 200,000,000.00, but NUMERIC(20, 4) holds 16 integer digits
    expect(() =>
      buildInvoiceLines([item({ ...metered, unit_price: '0.00000001' })], {
        currency: 'CAD',
        usage: new Map([[1, '20000000000000000']]),
        firstPeriod: false,
        taxRule: ontario,
      }),
    ).toThrow(/Events: the quantity 20000000000000000\.0000 exceeds the largest quantity stored/);
    // a stair-step fee of 900,000,000 for 0.0001 units averages 9e12 a unit: beyond NUMERIC(20, 8)
    const stairs = {
      pricing_model: 'per_unit',
      pricing_scheme: 'tiered',
      pricing_mode: 'flat',
      tiers: [{ up_to: null, unit_price: '0', flat_fee: '900000000' }],
    } as const;
    expect(() =>
      buildInvoiceLines([item({ ...metered, pricing: stairs })], {
        currency: 'CAD',
        usage: new Map([[1, '0.0001']]),
        firstPeriod: false,
        taxRule: ontario,
      }),
    ).toThrow(/Events: the unit price 9000000000000\.00000000 CAD exceeds the largest amount stored/);
  });

  it('trims decimals for people', () => {
    expect(trimDecimal('1500.00000000')).toBe('1500');
    expect(trimDecimal('0.50000000')).toBe('0.5');
    expect(trimDecimal('12')).toBe('12');
  });
});
