import { describe, expect, it } from 'vitest';
import { regionCode } from './regions.js';

describe('regionCode', () => {
  it('reads codes, names and common abbreviations alike', () => {
    const canadian = {
      QC: ['QC', 'qc', 'Québec', 'quebec', 'Que.', 'Qué', 'PQ'],
      PE: ['PE', 'PEI', 'P.E.I.', 'Prince Edward Island', 'Île-du-Prince-Édouard'],
      NS: ['NS', 'N.S.', 'Nova Scotia', 'Nouvelle-Écosse'],
      NL: ['Nfld.', 'Newfoundland and Labrador'],
      AB: ['Alta.', 'Alberta'],
      SK: ['Sask.'],
      ON: ['Ont.', ' ontario '],
    };
    for (const [code, spellings] of Object.entries(canadian)) {
      for (const spelling of spellings) expect(regionCode('CA', spelling), spelling).toBe(code);
    }
    for (const [spelling, code] of [
      ['Calif.', 'CA'],
      ['New York', 'NY'],
      ['Mass.', 'MA'],
      ['D.C.', 'DC'],
    ]) {
      expect(regionCode('US', spelling!), spelling).toBe(code);
    }
  });

  it('reads names written with "&" or with dots and commas inside', () => {
    // "Newfoundland & Labrador" fell back to federal GST (5 %) instead of HST (15 %)
    expect(regionCode('CA', 'Newfoundland & Labrador')).toBe('NL');
    expect(regionCode('CA', 'Newfoundland&Labrador')).toBe('NL');
    expect(regionCode('US', 'Washington, D.C.')).toBe('DC');
    expect(regionCode('US', 'Washington D.C.')).toBe('DC');
    expect(regionCode('US', 'Washington')).toBe('WA');
  });

  it('leaves unknown text upper-cased, and abbreviations to their own country', () => {
    expect(regionCode('CA', 'Atlantis')).toBe('ATLANTIS');
    expect(regionCode('US', 'Que.')).toBe('QUE.');
    expect(regionCode('DE', 'Bayern')).toBe('BAYERN');
  });
});
