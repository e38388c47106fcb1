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

/**
 * The language of a page for a visitor we know nothing else of, from the browser's Accept-Language
 * (RFC 9110): the one of French and English with the higher weight, the first listed on a tie;
 * English when the browser names neither (or refuses both with q=0). `de-DE,fr;q=0.9` is French:
 * a German reader who also reads French gets French, not the default.
 */
export function localeFromAcceptLanguage(header: string | undefined): Locale {
  let best: { locale: Locale; weight: number } | undefined;
  for (const range of (header ?? '').split(',')) {
    const [tag = '', ...parameters] = range.split(';');
    const language = tag.trim().toLowerCase().split('-')[0];
    const locale = language === 'fr' ? 'fr-CA' : language === 'en' ? 'en' : undefined;
    if (!locale) continue;
    const q = parameters
      .map((p) => /^\s*q\s*=\s*(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)\s*$/i.exec(p))
      .find(Boolean);
    const weight = q ? Number(q[1]) : 1;
    if (weight > 0 && (!best || weight > best.weight)) best = { locale, weight };
  }
  return best?.locale ?? 'en';
}
