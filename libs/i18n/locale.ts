import { regionCode } from '../regions/index.js';
import { LOCALES } from '../schemas/index.js';

export { LOCALES };
export type Locale = (typeof LOCALES)[number];

export function isLocale(value: unknown): value is Locale {
  return typeof value === 'string' && (LOCALES as readonly string[]).includes(value);
}

/**
 * The language a customer reads by default: French in Quebec (read as billing reads the province,
 * so "Québec" or "Que." counts), English elsewhere.
 */
export function defaultLocaleOf(customer: { country: string; state_province: string | null }): Locale {
  const country = customer.country.trim().toUpperCase();
  if (country !== 'CA' || !customer.state_province?.trim()) return 'en';
  return regionCode(country, customer.state_province) === 'QC' ? 'fr-CA' : 'en';
}
