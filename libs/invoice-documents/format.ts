import type { Locale } from '../i18n/index.js';

const regionNames: Record<Locale, Intl.DisplayNames> = {
  en: new Intl.DisplayNames(['en'], { type: 'region' }),
  'fr-CA': new Intl.DisplayNames(['fr-CA'], { type: 'region' }),
};

/** "CA" -> "Canada"; a code the runtime does not know prints as itself. */
export function countryName(code: string, locale: Locale): string {
  try {
    return regionNames[locale].of(code.trim().toUpperCase()) ?? code;
  } catch {
    return code;
  }
}
