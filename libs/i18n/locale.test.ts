import { describe, expect, it } from 'vitest';
import { defaultLocaleOf } from './locale.js';

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
