import { describe, expect, it } from 'vitest';
import { formatMoney, parseMoney } from '../../money/index.js';
import type { BillableItem } from '../pricing/index.js';
import { taxRuleFor } from '../tax/tax.js';
import { buildInvoiceLines, shareOut, trimDecimal } from './invoice-lines.js';

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
  it('rounds lines to the cent, taxes the subtotal once per component, carries proration lines', () => {
    const draft = buildInvoiceLines(
      [
        // 3 x 0.3333 = 0.9999 -> 1.00; 7 x 1.0005 = 7.0035 -> 7.00 (below a half)
        item({ subscription_item_id: 1, quantity: 3, unit_price: '0.33330000' }),
        item({ subscription_item_id: 2, quantity: 7, unit_price: '1.00050000' }),
      ],
      {
        currency: 'CAD',
        usage: new Map(),
        firstPeriod: false,
        taxRule: taxRuleFor({ country: 'CA', stateProvince: 'QC' }, '2026-03-01'),
        prorationLines: [
          {
            description: 'Unused time',
            subscription_item_id: 2,
            product_id: 10,
            quantity: '7.0000',
            unit_price: '1.00050000',
            amount: '-3.50000000',
            period_start: '2026-03-16T12:00:00.000Z',
            period_end: '2026-04-01T00:00:00.000Z',
          },
        ],
      },
    );
    expect(draft.lines.map((line) => line.line_total_pre_tax)).toEqual([
      '1.00000000',
      '7.00000000',
      '-3.50000000',
    ]);
    // subtotal 4.50: GST 0.225 -> 0.23, QST 0.448875 -> 0.45; tax 0.68
    expect(draft).toMatchObject({ subtotal: '4.50000000', tax_amount: '0.68000000', total: '5.18000000' });
    // the lines' shares of the tax are in cents and add up to it exactly
    expect(draft.lines.map((line) => line.tax_amount)).toEqual(['0.15000000', '1.06000000', '-0.53000000']);
  });

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
        // HST on the subtotal: 64.97 x 0.13 = 8.4461 -> 8.45, shared by amount: 7.7961 -> 7.80
        tax_amount: '7.80000000',
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
    expect(draft).toMatchObject({ subtotal: '64.97000000', tax_amount: '8.45000000', total: '73.42000000' });
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
    expect(quebec.lines[0]).toMatchObject({ tax_type: 'GST_QST', tax_amount: '1.50000000' });
  });

  it.each([
    ['JPY', ['1234.5', '999', '505'], ['3704', '6993', '505'], ['554', '1047', '76'], '1677'],
    ['KWD', ['1.2345', '0.999', '0.505'], ['3.704', '6.993', '0.505'], ['0.554', '1.047', '0.076'], '1.677'],
  ])(
    'in %s shares the tax over lines in its own minor unit, summing to the tax exactly',
    (currency, prices, lines, shares, tax) => {
      // GST and QST each rounded once on the subtotal; the two units left after flooring every share
      // go to the largest remainders, as test/billing/minor-unit-currencies.test.ts works out
      const draft = buildInvoiceLines(
        [3, 7, 1].map((quantity, index) =>
          item({ subscription_item_id: index + 1, currency, quantity, unit_price: prices[index]! }),
        ),
        {
          currency,
          usage: new Map(),
          firstPeriod: false,
          taxRule: taxRuleFor({ country: 'CA', stateProvince: 'QC' }),
        },
      );
      const money = (text: string) => formatMoney(parseMoney(text));
      expect(draft.lines.map((line) => line.line_total_pre_tax)).toEqual(lines.map(money));
      expect(draft.lines.map((line) => line.tax_amount)).toEqual(shares.map(money));
      expect(draft.tax_amount).toBe(money(tax));
    },
  );

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
    // the largest quantity NUMERIC(20, 4) holds is itself stored
    const largest = buildInvoiceLines([item({ ...metered, unit_price: '0.00000001' })], {
      currency: 'CAD',
      usage: new Map([[1, '9999999999999999.9999']]),
      firstPeriod: false,
      taxRule: ontario,
    });
    expect(largest.lines[0]).toMatchObject({
      quantity: '9999999999999999.9999',
      line_total_pre_tax: '100000000.00000000',
    });
    // the largest unit price NUMERIC(20, 8) holds is itself stored: 0.0001 at it costs 100,000,000.00
    const dearest = buildInvoiceLines([item({ ...metered, unit_price: '999999999999.99999999' })], {
      currency: 'CAD',
      usage: new Map([[1, '0.0001']]),
      firstPeriod: false,
      taxRule: ontario,
    });
    expect(dearest.lines[0]).toMatchObject({
      unit_price: '999999999999.99999999',
      line_total_pre_tax: '100000000.00000000',
    });
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

  it('refuses an invoice whose tax takes its total beyond the largest amount stored, though its subtotal fits', () => {
    // 9 x 100,000,000,000.00 = 900,000,000,000.00 fits NUMERIC(20, 8); with Ontario's 13 % it is 1,017,000,000,000.00
    expect(() =>
      buildInvoiceLines([item({ quantity: 9, unit_price: '100000000000.00000000' })], {
        currency: 'CAD',
        usage: new Map(),
        firstPeriod: false,
        taxRule: ontario,
      }),
    ).toThrow(/the invoice total 1017000000000\.00000000 CAD exceeds the largest amount stored/);
  });

  it('names fractional included units in a metered description, half a unit included', () => {
    const draft = buildInvoiceLines(
      [
        item({
          pricing_type: 'usage',
          usage_type: 'metered',
          product_name: 'Storage',
          unit_label: 'GB',
          unit_price: '2.00000000',
          included_units: '0.50000000',
        }),
      ],
      { currency: 'CAD', usage: new Map([[1, '3.25000000']]), firstPeriod: false, taxRule: ontario },
    );
    expect(draft.lines[0]).toMatchObject({
      description: 'Storage (usage: 3.25 GB, 0.5 included)',
      quantity: '2.7500',
      line_total_pre_tax: '5.50000000',
    });
  });

  it('rounds a carried line stored with digits below the minor unit, half-up, as every line', () => {
    // subscription_proration_lines keeps 8 digits: a line stored before payable amounts (or in
    // another rounding) is billed in the minor unit, a half away from zero, as its own lines are
    const carried = (amount: string) => ({
      description: 'Unused time',
      subscription_item_id: 1,
      product_id: 10,
      quantity: '2.0000',
      unit_price: '12.50000000',
      amount,
      period_start: '2026-03-11T06:30:15.000Z',
      period_end: '2026-04-01T00:00:00.000Z',
    });
    const lines = (currency: string, amounts: string[]) =>
      buildInvoiceLines([], {
        currency,
        usage: new Map(),
        firstPeriod: false,
        taxRule: taxRuleFor({ country: 'FR' }),
        prorationLines: amounts.map(carried),
      });
    const cad = lines('CAD', ['-16.71693000', '41.79232000', '0.00500000', '-0.00500000']);
    expect(cad.lines.map((line) => line.line_total_pre_tax)).toEqual([
      '-16.72000000',
      '41.79000000',
      '0.01000000',
      '-0.01000000',
    ]);
    expect(cad.total).toBe('25.07000000');
    expect(lines('JPY', ['-666.66666667', '1666.5']).lines.map((line) => line.line_total_pre_tax)).toEqual([
      '-667.00000000',
      '1667.00000000',
    ]);
  });

  it('shares the tax by largest remainder; a tie goes to the earlier line', () => {
    // docs/decisions.md, "Payable amounts": a line's tax_amount is its share of the tax (largest
    // remainder), so the lines add up to the invoice's tax
    const share = (tax: string, amounts: string[], currency: string) =>
      shareOut(parseMoney(tax), amounts.map(parseMoney), currency).map(formatMoney);
    expect(share('0.01', ['5', '5'], 'CAD')).toEqual(['0.01000000', '0.00000000']);
    expect(share('0.02', ['5', '5', '5'], 'CAD')).toEqual(['0.01000000', '0.01000000', '0.00000000']);
    // remainders decide before order: 1 yen over 1 : 3 goes to the larger line
    expect(share('1', ['1', '3'], 'JPY')).toEqual(['0.00000000', '1.00000000']);
    expect(share('0.001', ['2', '2'], 'KWD')).toEqual(['0.00100000', '0.00000000']);
  });

  it('shares a negative tax over lines adding up to less than zero, the shares summing to it', () => {
    // late lines alone can be credits (volume tiers price more usage lower): -0.05 and -0.05 in
    // Ontario are -0.10, HST -0.013 -> -0.01, which the earlier line carries (a tie)
    const share = (tax: string, amounts: string[]) =>
      shareOut(parseMoney(tax), amounts.map(parseMoney), 'CAD').map(formatMoney);
    expect(share('-0.01', ['-0.05', '-0.05'])).toEqual(['-0.01000000', '0.00000000']);
    // -0.03 over -10, 5, -6 (-11): -2.73, 1.36, -1.64 -> -3, 1, -1 by largest remainder
    expect(share('-0.03', ['-10', '5', '-6'])).toEqual(['-0.03000000', '0.01000000', '-0.01000000']);
    const late = (subscription_item_id: number) => ({
      description: 'API calls: late usage, Oct 1-31',
      subscription_item_id,
      product_id: 10,
      quantity: '1.0000',
      unit_price: '-0.05000000',
      amount: '-0.05000000',
      period_start: '2026-10-01T00:00:00.000Z',
      period_end: '2026-11-01T00:00:00.000Z',
    });
    const draft = buildInvoiceLines([], {
      currency: 'CAD',
      usage: new Map(),
      firstPeriod: false,
      taxRule: ontario,
      prorationLines: [late(1), late(2)],
    });
    expect(draft).toMatchObject({ subtotal: '-0.10000000', tax_amount: '-0.01000000', total: '-0.11000000' });
    expect(draft.lines.map((line) => line.tax_amount)).toEqual(['-0.01000000', '0.00000000']);
  });

  it('carries a proration line as given: its product, item, description, quantity and unit price', () => {
    const draft = buildInvoiceLines([], {
      currency: 'CAD',
      usage: new Map(),
      firstPeriod: false,
      taxRule: taxRuleFor({ country: 'FR' }),
      prorationLines: [
        {
          description: 'Seats: 2 -> 5, Mar 11-31',
          subscription_item_id: 7,
          product_id: 42,
          quantity: '3.0000',
          unit_price: '12.50000000',
          amount: '25.80645161',
          period_start: '2026-03-11T00:00:00.000Z',
          period_end: '2026-04-01T00:00:00.000Z',
        },
      ],
    });
    expect(draft.lines).toEqual([
      {
        product_id: 42,
        subscription_item_id: 7,
        description: 'Seats: 2 -> 5, Mar 11-31',
        quantity: '3.0000',
        unit_price: '12.50000000',
        line_total_pre_tax: '25.81000000',
        tax_amount: '0.00000000',
        // outside Canada and the US no rule applies: no tax type, not EXEMPT
        tax_type: null,
      },
    ]);
  });

  it("shows a tiered line's effective unit price, not the product's list price", () => {
    // graduated: 1-100 at 1.00, 101+ at 0.50; 300 units cost 200.00, 0.66666667 a unit
    const graduated = {
      pricing_model: 'per_unit',
      pricing_scheme: 'tiered',
      pricing_mode: 'graduated',
      tiers: [
        { up_to: '100', unit_price: '1.00', flat_fee: '0' },
        { up_to: null, unit_price: '0.50', flat_fee: '0' },
      ],
    } as const;
    const draft = buildInvoiceLines([item({ quantity: 300, unit_price: '0', pricing: graduated })], {
      currency: 'CAD',
      usage: new Map(),
      firstPeriod: false,
      taxRule: ontario,
    });
    expect(draft.lines[0]).toMatchObject({
      quantity: '300.0000',
      unit_price: '0.66666667',
      line_total_pre_tax: '200.00000000',
    });
  });

  it('names any included units in a metered description, down to the smallest stored', () => {
    const draft = buildInvoiceLines(
      [
        item({
          pricing_type: 'usage',
          usage_type: 'metered',
          product_name: 'Storage',
          unit_label: 'GB',
          included_units: '0.00000001',
        }),
      ],
      { currency: 'CAD', usage: new Map([[1, '2.00000000']]), firstPeriod: false, taxRule: ontario },
    );
    expect(draft.lines[0]!.description).toBe('Storage (usage: 2 GB, 0.00000001 included)');
  });

  it('shares nothing over lines adding up to zero, whatever the tax', () => {
    const share = shareOut(parseMoney('0.13'), ['5', '-5'].map(parseMoney), 'CAD').map(formatMoney);
    expect(share).toEqual(['0.00000000', '0.00000000']);
  });

  it('trims decimals for people', () => {
    expect(trimDecimal('1500.00000000')).toBe('1500');
    expect(trimDecimal('0.50000000')).toBe('0.5');
    expect(trimDecimal('12')).toBe('12');
  });
});
