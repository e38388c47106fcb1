import { describe, expect, it } from 'vitest';
import { formatMoney, parseScaled } from '../../money/index.js';
import { TAX_REGIONS } from '../../regions/index.js';
import { HIGHEST_TAX_RATE } from '../invoices/invoice-limits.js';
import {
  CANADIAN_PROVINCES,
  computeTax,
  federalGstOf,
  federalGstOfSubtotal,
  taxRuleFor,
  UnknownRegionError,
  US_STATE_RATES,
} from './tax.js';

const taxOn = (country: string, stateProvince: string | null, amount = '100', date = '2026-01-15') =>
  computeTax(taxRuleFor({ country, stateProvince }, date), amount, country === 'US' ? 'USD' : 'CAD');

describe('destination sales tax', () => {
  it.each([
    ['ON', 'HST', '13.00000000'],
    ['NB', 'HST', '15.00000000'],
    ['NL', 'HST', '15.00000000'],
    ['PE', 'HST', '15.00000000'],
    ['NS', 'HST', '14.00000000'],
    ['QC', 'GST_QST', '14.98000000'], // QST 9.975 -> 9.98, half-up,
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

  it('levies each component where its rule says: GST in CA, HST, PST and state tax in their region', () => {
    const jurisdictions = (country: string, region: string) =>
      taxOn(country, region).lines.map((line) => [line.name, line.jurisdiction, line.rate]);
    expect(jurisdictions('CA', 'ON')).toEqual([['HST', 'ON', '0.13']]);
    expect(jurisdictions('CA', 'NB')).toEqual([['HST', 'NB', '0.15']]);
    expect(jurisdictions('CA', 'NS')).toEqual([['HST', 'NS', '0.14']]);
    expect(jurisdictions('CA', 'BC')).toEqual([
      ['GST', 'CA', '0.05'],
      ['PST', 'BC', '0.07'],
    ]);
    expect(jurisdictions('CA', 'SK')).toEqual([
      ['GST', 'CA', '0.05'],
      ['PST', 'SK', '0.06'],
    ]);
    expect(jurisdictions('CA', 'AB')).toEqual([['GST', 'CA', '0.05']]);
    expect(jurisdictions('US', 'NY')).toEqual([['STATE_SALES_TAX', 'NY', '0.04']]);
    expect(jurisdictions('US', 'OR')).toEqual([['STATE_SALES_TAX', 'OR', '0']]);
  });

  it('applies the Nova Scotia rate in force on the invoice date', () => {
    expect(taxOn('CA', 'NS', '100', '2025-03-31').amount).toBe('15.00000000');
    expect(taxOn('CA', 'NS', '100', '2025-04-01').amount).toBe('14.00000000');
  });

  it('refuses to guess: a missing or unknown region in Canada or the US has no rule', () => {
    // federal GST alone (CA) or nothing (US) would undertax: the billing run parks instead
    for (const [country, region] of [
      ['CA', null],
      ['CA', ''],
      ['CA', 'ZZ'],
      ['CA', 'Atlantis'],
      ['CA', 'NY'],
      ['US', null],
      ['US', 'ZZ'],
      ['US', 'ON'],
    ] as const) {
      expect(() => taxRuleFor({ country, stateProvince: region }), `${country} ${region}`).toThrow(
        UnknownRegionError,
      );
    }
    expect(() => taxRuleFor({ country: 'CA', stateProvince: 'ZZ' })).toThrow(
      `the customer's state_province "ZZ" is no CA province or territory the tax table knows`,
    );
    expect(() => taxRuleFor({ country: 'US' })).toThrow('the customer is in US without a state_province');
    // a region of spaces only is no region: the customer is told to set one, not that "" is unknown
    expect(() => taxRuleFor({ country: 'CA', stateProvince: '   ' })).toThrow(
      'the customer is in CA without a state_province',
    );

    // a tax-exempt customer owes none wherever it is, and other countries have no rule here
    expect(taxRuleFor({ country: 'CA', stateProvince: 'ZZ', taxExempt: true }).taxType).toBe('EXEMPT');
    expect(taxRuleFor({ country: 'FR', stateProvince: 'Bretagne' }).taxType).toBeNull();
  });

  it('has a rule for every region the regions table knows, and a region for every US rate', () => {
    for (const [country, regions] of Object.entries(TAX_REGIONS)) {
      for (const region of regions) {
        expect(taxRuleFor({ country, stateProvince: region }).components.length, region).toBeGreaterThan(0);
      }
    }
    expect([...CANADIAN_PROVINCES]).toEqual([...TAX_REGIONS.CA!]);
    expect(Object.keys(US_STATE_RATES).sort()).toEqual([...TAX_REGIONS.US!].sort());
  });

  it('reads provinces and states written out, in English or French, with or without accents', () => {
    for (const [country, region, taxType, tax] of [
      ['CA', 'Ontario', 'HST', '13.00000000'],
      ['CA', 'Québec', 'GST_QST', '14.98000000'],
      ['CA', 'quebec', 'GST_QST', '14.98000000'],
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
  });

  it('quotes a note saying why the rule is what it is, one per kind of rule', () => {
    // the MCP tax_lookup tool hands the note to an assistant as is
    const note = (country: string, stateProvince: string | null, taxExempt = false) =>
      taxRuleFor({ country, stateProvince, taxExempt }, '2026-01-15').note;
    expect(note('CA', 'NS')).toBe('Nova Scotia harmonized sales tax.');
    expect(note('CA', 'ON')).toBe('Harmonized sales tax.');
    expect(note('CA', 'QC')).toBe('Quebec: federal GST plus Quebec sales tax.');
    expect(note('CA', 'BC')).toBe('Federal GST plus provincial sales tax.');
    expect(note('CA', 'AB')).toBe('Federal GST only; no provincial sales tax.');
    expect(note('CA', 'ON', true)).toBe('The customer is tax-exempt: no sales tax is charged.');
    expect(note('FR', null)).toBe('No sales tax rule for country FR: no tax computed.');
  });

  it('takes the rates in force today when no date is given', () => {
    // Nova Scotia's HST has been 14 % since 2025-04-01, before any today this runs on
    expect(taxRuleFor({ country: 'CA', stateProvince: 'NS' }).rate).toBe('0.14');
  });

  it('names an unknown region trimmed, in an error named UnknownRegionError', () => {
    let error: unknown;
    try {
      taxRuleFor({ country: 'US', stateProvince: '  ZZ ' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UnknownRegionError);
    expect((error as Error).name).toBe('UnknownRegionError');
    expect((error as Error).message).toBe(
      `the customer's state_province "ZZ" is no US state the tax table knows, so its tax cannot be determined (correct it with customer update)`,
    );
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
    // the note an assistant quotes says which it is
    expect(taxRuleFor({ country: 'US', stateProvince: 'OR' }).note).toBe('OR has no statewide sales tax.');
    expect(taxRuleFor({ country: 'US', stateProvince: 'NY' }).note).toBe(
      'NY statewide base sales tax; local taxes are not included.',
    );
    expect(Object.keys(US_STATE_RATES)).toHaveLength(51);
  });

  it.each([
    ['AL', '40.00'],
    ['AK', '0.00'],
    ['AZ', '56.00'],
    ['AR', '65.00'],
    ['CA', '72.50'],
    ['CO', '29.00'],
    ['CT', '63.50'],
    ['DC', '60.00'],
    ['DE', '0.00'],
    ['FL', '60.00'],
    ['GA', '40.00'],
    ['HI', '40.00'],
    ['ID', '60.00'],
    ['IL', '62.50'],
    ['IN', '70.00'],
    ['IA', '60.00'],
    ['KS', '65.00'],
    ['KY', '60.00'],
    ['LA', '50.00'],
    ['ME', '55.00'],
    ['MD', '60.00'],
    ['MA', '62.50'],
    ['MI', '60.00'],
    ['MN', '68.75'],
    ['MS', '70.00'],
    ['MO', '42.25'],
    ['MT', '0.00'],
    ['NE', '55.00'],
    ['NV', '68.50'],
    ['NH', '0.00'],
    ['NJ', '66.25'],
    ['NM', '48.75'],
    ['NY', '40.00'],
    ['NC', '47.50'],
    ['ND', '50.00'],
    ['OH', '57.50'],
    ['OK', '45.00'],
    ['OR', '0.00'],
    ['PA', '60.00'],
    ['RI', '70.00'],
    ['SC', '60.00'],
    ['SD', '42.00'],
    ['TN', '70.00'],
    ['TX', '62.50'],
    ['UT', '61.00'],
    ['VT', '60.00'],
    ['VA', '53.00'],
    ['WA', '65.00'],
    ['WV', '60.00'],
    ['WI', '50.00'],
    ['WY', '40.00'],
  ])('charges %s its statewide base rate: %s on 1,000.00', (state, amount) => {
    // each state's rate as published (local taxes excluded), so a slip in the table shows here
    expect(taxOn('US', state, '1000').amount).toBe(formatMoney(parseScaled(amount, 8)));
  });

  it('charges nothing to a tax-exempt customer, recorded as EXEMPT', () => {
    const tax = computeTax(taxRuleFor({ country: 'CA', stateProvince: 'ON', taxExempt: true }), '100', 'CAD');
    expect(tax).toEqual({ taxType: 'EXEMPT', lines: [], amount: '0.00000000' });
    // outside Canada and the US too: the exemption is what the invoice records
    expect(taxRuleFor({ country: 'FR', taxExempt: true }).taxType).toBe('EXEMPT');
  });

  it('reads the country code in any case and with surrounding spaces, as a stored row may hold it', () => {
    expect(taxRuleFor({ country: 'ca', stateProvince: 'ON' }, '2026-01-15')).toMatchObject({
      taxType: 'HST',
      rate: '0.13',
    });
    expect(taxRuleFor({ country: ' us ', stateProvince: 'NY' }, '2026-01-15')).toMatchObject({
      taxType: 'US_SALES_TAX',
      rate: '0.04',
    });
    // a lower-case country is still one taxed by region: no region is refused, never untaxed
    expect(() => taxRuleFor({ country: 'ca', stateProvince: null })).toThrow(UnknownRegionError);
  });

  it('has no rule (tax_type null) outside Canada and the US', () => {
    expect(taxOn('FR', null)).toEqual({ taxType: null, lines: [], amount: '0.00000000' });
  });

  it('rounds each component half-up to the cent, on the amount it is given', () => {
    // 19.99 x 0.13 = 2.5987 -> 2.60; 0.10 x 0.05 = 0.005 -> 0.01 (a half, up)
    expect(taxOn('CA', 'ON', '19.99').amount).toBe('2.60000000');
    expect(taxOn('CA', 'AB', '0.10').amount).toBe('0.01000000');
    // QC: GST 10.01 x 0.05 = 0.5005 -> 0.50; QST 10.01 x 0.09975 = 0.99849... -> 1.00
    expect(taxOn('CA', 'QC', '10.01').lines.map((line) => line.amount)).toEqual(['0.50000000', '1.00000000']);
    expect(taxOn('CA', 'QC', '10.01').amount).toBe('1.50000000');
    // on the amount given, not on it rounded to the cent first: 0.099 x 0.05 = 0.00495 -> 0.00
    // (0.10 x 0.05 = 0.005 would be 0.01); the tax_lookup tool takes amounts of 8 digits
    expect(taxOn('CA', 'AB', '0.099').amount).toBe('0.00000000');
  });

  it("rounds each component to the currency's minor unit: whole yen, thousandths of a dinar", () => {
    const qc = taxRuleFor({ country: 'CA', stateProvince: 'QC' }, '2026-01-15');
    // 3,702 yen: GST 185.1 -> 185, QST 369.2745 -> 369 (in cents they would be 185.10 and 369.27)
    expect(computeTax(qc, '3702', 'JPY')).toMatchObject({
      lines: [{ amount: '185.00000000' }, { amount: '369.00000000' }],
      amount: '554.00000000',
    });
    // 10.005 dinars in Ontario: 1.30065 -> 1.301 (in cents 1.30); 0.013 at GST: 0.00065 -> 0.001, a half up
    const on = taxRuleFor({ country: 'CA', stateProvince: 'ON' }, '2026-01-15');
    expect(computeTax(on, '10.005', 'KWD').amount).toBe('1.30100000');
    const ab = taxRuleFor({ country: 'CA', stateProvince: 'AB' }, '2026-01-15');
    expect(computeTax(ab, '0.013', 'KWD').amount).toBe('0.00100000');
  });

  it("gives the federal GST of a subtotal half-up in the currency's minor unit", () => {
    // 10.01 x 0.05 = 0.5005: 0.50 in cents, 0.501 in thousandths of a dinar (a half, up)
    expect(federalGstOfSubtotal('10.01', 'CAD')).toBe('0.50000000');
    expect(federalGstOfSubtotal('10.01', 'KWD')).toBe('0.50100000');
    // 3,702 x 0.05 = 185.1 -> 185 yen; 0.10 x 0.05 = 0.005 -> 0.01, not half-even 0.00500000
    expect(federalGstOfSubtotal('3702', 'JPY')).toBe('185.00000000');
    expect(federalGstOfSubtotal('0.10', 'CAD')).toBe('0.01000000');
  });

  it('splits the GST of an invoice issued before payable amounts as it was stored: half-even at 8 digits', () => {
    // 33.3333333 x 0.05 = 1.666666665: a half, to the even 1.66666666 (not 1.66666667, nor 1.67)
    expect(federalGstOf('33.3333333')).toBe('1.66666666');
    // 33.33333333 x 0.05 = 1.6666666665: more than a half, up
    expect(federalGstOf('33.33333333')).toBe('1.66666667');
    // 0.0000003 x 0.05 = 0.000000015: a half, to the even 0.00000002
    expect(federalGstOf('0.0000003')).toBe('0.00000002');
    expect(federalGstOf('-0.0000003')).toBe('-0.00000002');
    expect(federalGstOf('19.99')).toBe('0.99950000');
  });

  it('rounds a half cent up at every province and state rate', () => {
    const destinations = [
      ...CANADIAN_PROVINCES.map((code) => ({ country: 'CA', stateProvince: code })),
      ...Object.keys(US_STATE_RATES).map((code) => ({ country: 'US', stateProvince: code })),
    ];
    let halves = 0;
    const never: string[] = [];
    for (const destination of destinations) {
      const rule = taxRuleFor(destination, '2026-01-15');
      rule.components.forEach((component, index) => {
        const rate = parseScaled(component.rate, 6); // millionths
        if (rate === 0n) return;
        // the fewest cents c where c x rate is a whole number of cents and a half: 2 x c x rate /
        // 10^6 must be an odd integer. A rate whose double, in lowest terms, has an even numerator
        // (0.04 = 1/25, AZ 0.056 = 7/125) never lands on a half cent: those are counted apart.
        let cents = 1n;
        const lands = (c: bigint) =>
          (2n * c * rate) % 1_000_000n === 0n && ((2n * c * rate) / 1_000_000n) % 2n === 1n;
        while (cents <= 1_000_000n && !lands(cents)) cents++;
        if (cents > 1_000_000n) {
          never.push(component.rate);
          return;
        }
        const halfCents = (2n * cents * rate) / 1_000_000n; // the tax in half cents, odd
        const expected = formatMoney(((halfCents + 1n) / 2n) * 1_000_000n); // up to the next cent
        const amount = formatMoney(cents * 1_000_000n);
        const tax = computeTax(rule, amount, destination.country === 'US' ? 'USD' : 'CAD');
        expect(tax.lines[index]!.amount, `${destination.stateProvince} ${component.name} on ${amount}`).toBe(
          expected,
        );
        halves++;
      });
    }
    expect(halves).toBeGreaterThan(50);
    expect([...new Set(never)].sort()).toEqual(['0.04', '0.056']);
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
