import type { Locale } from '../i18n/index.js';

const regionNames: Record<Locale, Intl.DisplayNames> = {
  en: new Intl.DisplayNames(['en'], { type: 'region' }),
  'fr-CA': new Intl.DisplayNames(['fr-CA'], { type: 'region' }),
};

/**
 * `<number>.pdf`, safe inside a quoted Content-Disposition filename whatever the number holds
 * (numbers are INV-000001 or CN-000001 today; nothing else may reach the header): `fallback`.pdf
 * when nothing of it is left.
 */
export function pdfFilename(number: string, fallback: string): string {
  const safe = number.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '');
  return `${safe || fallback}.pdf`;
}

/** "CA" -> "Canada"; a code the runtime does not know prints as itself. */
export function countryName(code: string, locale: Locale): string {
  try {
    return regionNames[locale].of(code.trim().toUpperCase()) ?? code;
  } catch {
    return code;
  }
}
