import { regionCode } from '../regions/index.js';

/**
 * The locale an assistant should write to a customer in, from where the customer is. Quebec is
 * French-speaking (fr-CA); the rest of Canada and the US default to English. The table covers the
 * countries whose main language is unambiguous; anywhere else falls back to plain `en`, which
 * claims no regional convention we do not know.
 */
const LANGUAGE_BY_COUNTRY: Readonly<Record<string, string>> = {
  CA: 'en',
  US: 'en',
  GB: 'en',
  IE: 'en',
  AU: 'en',
  NZ: 'en',
  FR: 'fr',
  MC: 'fr',
  DE: 'de',
  AT: 'de',
  ES: 'es',
  MX: 'es',
  AR: 'es',
  CL: 'es',
  CO: 'es',
  IT: 'it',
  NL: 'nl',
  PT: 'pt',
  BR: 'pt',
  JP: 'ja',
  KR: 'ko',
  CN: 'zh',
  TW: 'zh',
  SE: 'sv',
  NO: 'nb',
  DK: 'da',
  FI: 'fi',
  PL: 'pl',
};

const FRENCH_CANADA = new Set(['QC']);

export function customerLocale(country: string, stateProvince?: string | null): string {
  const countryCode = country.trim().toUpperCase();
  // read as billing reads it, so a customer taxed as QC ("Québec") is also written to in French
  const region = stateProvince?.trim() ? regionCode(countryCode, stateProvince) : undefined;
  if (countryCode === 'CA' && region && FRENCH_CANADA.has(region)) return 'fr-CA';
  const language = LANGUAGE_BY_COUNTRY[countryCode];
  return language ? `${language}-${countryCode}` : 'en';
}
