import { describe, expect, it } from 'vitest';
import { parseScaled } from '../money/index.js';
import { HIGHEST_TAX_RATE } from './invoice-limits.js';
import { CANADIAN_PROVINCES, computeTax, taxRuleFor, US_STATE_RATES } from './tax.js';

const taxOn = (country: string, stateProvince: string | null, amount = '100', date = '2026-01-15') =>
  computeTax(taxRuleFor({ country, stateProvince }, date), amount);

describe('destination sales tax', () => {
  it.each([
    ['ON', 'HST', '13.00000000'],
    ['NB', 'HST', '15.00000000'],
    ['NL', 'HST', '15.00000000'],
    ['PE', 'HST', '15.00000000'],
    ['NS', 'HST', '14.00000000'],
    ['QC', 'GST_QST', '14.97500000'],
    ['BC', 'GST_PST', '12.00000000'],
    ['SK', 'GST_PST', '11.00000000'],
    ['MB', 'GST_PST', '12.00000000'],
    ['AB', 'GST', '5.00000000'],
    ['YT', 'GST', '5.00000000'],
    ['NT', 'GST', '5.00000000'],
    ['NU', 'GST', '5.00000000'],
  ])('charges %s %s, %s on 100', (province, taxType, amount) => {
    const tax = taxOn('CA', province);
    expect(tax.taxType).toBe(taxType);
    expect(tax.amount).toBe(amount);
  });

  it('keeps each component of a combined tax as its own line', () => {
    expect(taxOn('CA', 'QC', '200').lines).toEqual([
      { name: 'GST', jurisdiction: 'CA', rate: '0.05', amount: '10.00000000' },
      { name: 'QST', jurisdiction: 'QC', rate: '0.09975', amount: '19.95000000' },
    ]);
    expect(taxRuleFor({ country: 'CA', stateProvince: 'QC' }).rate).toBe('0.14975');
  });

  it('applies the Nova Scotia rate in force on the invoice date', () => {
    expect(taxOn('CA', 'NS', '100', '2025-03-31').amount).toBe('15.00000000');
    expect(taxOn('CA', 'NS', '100', '2025-04-01').amount).toBe('14.00000000');
  });

  it('charges GST alone when the province is missing or unknown', () => {
    expect(taxOn('CA', null).taxType).toBe('GST');
    expect(taxOn('CA', 'XX').amount).toBe('5.00000000');
  });

  it('reads provinces and states written out, in English or French, with or without accents', () => {
    for (const [country, region, taxType, tax] of [
      ['CA', 'Ontario', 'HST', '13.00000000'],
      ['CA', 'Québec', 'GST_QST', '14.97500000'],
      ['CA', 'quebec', 'GST_QST', '14.97500000'],
      ['CA', 'Île-du-Prince-Édouard', 'HST', '15.00000000'],
      ['CA', 'British Columbia', 'GST_PST', '12.00000000'],
      ['CA', ' on ', 'HST', '13.00000000'],
      ['US', 'California', 'US_SALES_TAX', '7.25000000'],
      ['US', 'new york', 'US_SALES_TAX', '4.00000000'],
      ['US', 'District of Columbia', 'US_SALES_TAX', '6.00000000'],
    ] as const) {
      const result = taxOn(country, region);
      expect([result.taxType, result.amount], `${country} ${region}`).toEqual([taxType, tax]);
    }
    // a name that is no province stays unrecognised: GST only
    expect(taxOn('CA', 'Atlantis').taxType).toBe('GST');
  });

  it('charges the US state base rate, and nothing in the five states without one', () => {
    expect(taxOn('US', 'CA').amount).toBe('7.25000000');
    expect(taxOn('US', 'NY').amount).toBe('4.00000000');
    expect(taxOn('US', 'TX').amount).toBe('6.25000000');
    expect(taxOn('US', 'MN', '1000').amount).toBe('68.75000000');
    for (const state of ['AK', 'DE', 'MT', 'NH', 'OR']) {
      const tax = taxOn('US', state);
      expect(tax.taxType, state).toBe('US_SALES_TAX');
      expect(tax.amount, state).toBe('0.00000000');
    }
    expect(Object.keys(US_STATE_RATES)).toHaveLength(51);
  });

  it('charges nothing to a tax-exempt customer, recorded as EXEMPT', () => {
    const tax = computeTax(taxRuleFor({ country: 'CA', stateProvince: 'ON', taxExempt: true }), '100');
    expect(tax).toEqual({ taxType: 'EXEMPT', lines: [], amount: '0.00000000' });
  });

  it('has no rule (tax_type null) outside Canada and the US, or for an unknown state', () => {
    expect(taxOn('FR', null)).toEqual({ taxType: null, lines: [], amount: '0.00000000' });
    expect(taxOn('US', 'ZZ').taxType).toBeNull();
  });

  it('rounds each component half-even at 8 fractional digits', () => {
    // 0.00000010 x 0.05 = 0.000000005 -> 0.00000000 (half to even); x 0.15 = 0.000000015 -> 0.00000002
    expect(taxOn('CA', 'AB', '0.0000001').amount).toBe('0.00000000');
    expect(taxOn('CA', 'NB', '0.0000001').amount).toBe('0.00000002');
    expect(taxOn('CA', 'ON', '19.99').amount).toBe('2.59870000');
  });

  it('never charges more than HIGHEST_TAX_RATE, on any date, anywhere', () => {
    const destinations = [
      ...CANADIAN_PROVINCES.map((code) => ({ country: 'CA', stateProvince: code })),
      ...Object.keys(US_STATE_RATES).map((code) => ({ country: 'US', stateProvince: code })),
    ];
    expect(destinations.length).toBeGreaterThan(60);
    for (const date of ['2025-01-01', '2025-06-01', '2026-11-27']) {
      for (const destination of destinations) {
        const rate = parseScaled(taxRuleFor(destination, date).rate, 6);
        expect(rate <= parseScaled(HIGHEST_TAX_RATE, 6), `${destination.stateProvince} ${date}`).toBe(true);
      }
    }
  });
});
