import { describe, expect, it } from 'vitest';
import { defaultLocaleOf, isLocale, localeFromAcceptLanguage } from './locale.js';

describe('defaultLocaleOf', () => {
  it('reads French in Quebec however the country and province are written, English elsewhere', () => {
    expect(defaultLocaleOf({ country: 'CA', state_province: 'QC' })).toBe('fr-CA');
    expect(defaultLocaleOf({ country: ' ca ', state_province: 'Québec' })).toBe('fr-CA');
    expect(defaultLocaleOf({ country: 'ca', state_province: 'QC' })).toBe('fr-CA');
    expect(defaultLocaleOf({ country: 'CA', state_province: 'ON' })).toBe('en');
    expect(defaultLocaleOf({ country: 'CA', state_province: null })).toBe('en');
    expect(defaultLocaleOf({ country: 'CA', state_province: '  ' })).toBe('en');
    expect(defaultLocaleOf({ country: 'US', state_province: 'QC' })).toBe('en');
  });
});

describe('localeFromAcceptLanguage', () => {
  it('picks the heavier of French and English, the first on a tie, English when neither is named', () => {
    const cases: [string | undefined, string][] = [
      ['fr-CA,fr;q=0.9,en;q=0.8', 'fr-CA'],
      [' FR', 'fr-CA'],
      ['en-US,en;q=0.9,fr-CA;q=0.8', 'en'],
      // neither first: the one the browser weighs higher of the two
      ['de-DE,fr;q=0.9,en;q=0.8', 'fr-CA'],
      ['de-DE,en;q=0.7,fr;q=0.8', 'fr-CA'],
      ['de-DE,fr;q=0.7,en;q=0.8', 'en'],
      ['de,fr;q=0.5', 'fr-CA'],
      // a weight written later wins over order; equal weights keep the first
      ['fr;q=0.4,en;q=0.5', 'en'],
      ['en;q=0.5,fr;q=0.5', 'en'],
      ['fr;q=0.5,en;q=0.5', 'fr-CA'],
      // a language without q weighs 1, above any later one that has a q
      ['en-US,fr;q=0.9', 'en'],
      ['fr-CA,en;q=0.9', 'fr-CA'],
      // q=0 refuses a language
      ['fr;q=0,de', 'en'],
      ['fr;q=0.000', 'en'],
      ['fr;q=0.001', 'fr-CA'],
      ['frr-DE,de;q=0.8', 'en'], // North Frisian, not French
      ['FR-ca ; Q=0.9', 'fr-CA'],
      // the parameter's name in either case, spaces around its "="
      ['fr;Q=0,en;q=0.1', 'en'],
      ['fr;q = 0.4,en;q=0.5', 'en'],
      ['en; q =0.3 ,fr;q=0.6', 'fr-CA'],
      ['*', 'en'],
      ['', 'en'],
      [undefined, 'en'],
    ];
    for (const [header, locale] of cases)
      expect(localeFromAcceptLanguage(header), String(header)).toBe(locale);
  });
});

describe('localeFromAcceptLanguage, given a weight RFC 9110 does not allow', () => {
  it('reads no weight from it: the language weighs 1, as if no q were given', () => {
    const cases: [string, string][] = [
      // above 1, more than three decimals, trailing text, another parameter ending in q
      ['en,fr;q=5', 'en'],
      ['fr,en;q=1.5', 'fr-CA'],
      ['fr;q=0.9999,en', 'fr-CA'],
      ['fr;q=0x,en', 'fr-CA'],
      ['fr;xq=0,en', 'fr-CA'],
    ];
    for (const [header, locale] of cases) expect(localeFromAcceptLanguage(header), header).toBe(locale);
  });
});

describe('isLocale', () => {
  it('takes exactly a locale we write, so a page asked in another falls back instead of failing', () => {
    expect(isLocale('en')).toBe(true);
    expect(isLocale('fr-CA')).toBe(true);
    for (const other of ['fr', 'FR-CA', 'fr-ca', 'en-US', ' en', 'e', '', 'de', undefined, ['en']]) {
      expect(isLocale(other), String(other)).toBe(false);
    }
  });
});
