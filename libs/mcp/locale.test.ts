import { describe, expect, it } from 'vitest';
import { customerLocale } from './locale.js';

describe('customerLocale', () => {
  it('is French Canadian in Quebec and English elsewhere in Canada', () => {
    expect(customerLocale('CA', 'QC')).toBe('fr-CA');
    expect(customerLocale('ca', ' qc ')).toBe('fr-CA');
    expect(customerLocale('CA', 'ON')).toBe('en-CA');
    expect(customerLocale('CA', 'NB')).toBe('en-CA');
    expect(customerLocale('CA', null)).toBe('en-CA');
  });

  it('reads a written-out province as billing does', () => {
    expect(customerLocale('CA', 'Québec')).toBe('fr-CA');
    expect(customerLocale('CA', 'quebec')).toBe('fr-CA');
    expect(customerLocale('CA', 'Ontario')).toBe('en-CA');
    expect(customerLocale('US', 'new york')).toBe('en-US');
  });

  it('is US English in the US whatever the state', () => {
    expect(customerLocale('US', 'NY')).toBe('en-US');
    expect(customerLocale('US', undefined)).toBe('en-US');
  });

  it('uses the main language of other known countries and plain English otherwise', () => {
    expect(customerLocale('FR', null)).toBe('fr-FR');
    expect(customerLocale('MX', null)).toBe('es-MX');
    expect(customerLocale('BE', null)).toBe('en');
    expect(customerLocale('ZZ', 'QC')).toBe('en');
    // Norwegian is written Bokmål (nb), not the macrolanguage code
    expect(customerLocale('NO', null)).toBe('nb-NO');
    expect(customerLocale('AT', null)).toBe('de-AT');
    expect(customerLocale('BR', null)).toBe('pt-BR');
    expect(customerLocale('TW', null)).toBe('zh-TW');
  });

  it('reads a country code with stray spaces or in lower case', () => {
    expect(customerLocale(' fr ', null)).toBe('fr-FR');
    expect(customerLocale('de\n', '')).toBe('de-DE');
    expect(customerLocale(' CA', 'QC')).toBe('fr-CA');
  });
});
