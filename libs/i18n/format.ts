import { minorUnitDigits } from '../money/index.js';
import type { Locale } from './locale.js';

/*
 * How amounts, quantities and dates read for people, in one place for every page and document.
 * Values stay exact decimal text throughout (never a float): money keeps every significant digit
 * but at least 2 decimals (49.99000000 -> 49.99, a sub-cent unit price 0.00125000 stays 0.00125).
 * English keeps the amount followed by the currency code ("1,234.56 CAD"), unambiguous to a
 * reader on either side of the border; Canadian French follows Quebec usage ("1 234,56 $",
 * "1 234,56 $ US") with no-break spaces, as Intl writes it.
 */

const MAX_FRACTION_DIGITS = 8;

/** "1234.5" -> "1,234.50" in English grouping, every significant digit kept, at least `minimumFractionDigits`. */
function englishDecimal(decimal: string, minimumFractionDigits: number): string {
  const negative = decimal.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? decimal.slice(1) : decimal).split('.');
  let kept = fraction.replace(/0+$/, '');
  if (kept.length < minimumFractionDigits) kept = kept.padEnd(minimumFractionDigits, '0');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}${kept ? `.${kept}` : ''}`;
}

const frenchFormats = new Map<string, Intl.NumberFormat>();

/** Intl formats a decimal string exactly (no float on the way); one formatter per currency, kept. */
function frenchFormat(currency: string | null, minimumFractionDigits: number): Intl.NumberFormat {
  const key = `${currency ?? ''}:${minimumFractionDigits}`;
  let format = frenchFormats.get(key);
  if (!format) {
    format = new Intl.NumberFormat('fr-CA', {
      ...(currency ? { style: 'currency', currency } : {}),
      minimumFractionDigits,
      maximumFractionDigits: MAX_FRACTION_DIGITS,
    });
    frenchFormats.set(key, format);
  }
  return format;
}

/**
 * Figures written so far: a page writes the same amounts (a plan's monthly total) and small
 * quantities again and again, and Intl's formatting is the costliest step of a row. Bounded:
 * emptied when full.
 */
const writtenFigures = new Map<string, string>();
const MAX_WRITTEN = 10_000;

function remembered(written: Map<string, string>, key: string, write: () => string): string {
  let text = written.get(key);
  if (text === undefined) {
    text = write();
    if (written.size >= MAX_WRITTEN) written.clear();
    written.set(key, text);
  }
  return text;
}

function frenchDecimal(decimal: string, currency: string | null, minimumFractionDigits: number): string {
  return remembered(writtenFigures, `${currency ?? ''}|${minimumFractionDigits}|${decimal}`, () => {
    try {
      // Intl takes the decimal string as an exact decimal (NumberFormat v3)
      return frenchFormat(currency, minimumFractionDigits).format(decimal as unknown as number);
    } catch {
      // a currency code Intl does not accept prints after the number, as in English
      return `${frenchFormat(null, minimumFractionDigits).format(decimal as unknown as number)}\u00a0${currency}`;
    }
  });
}

/**
 * Digits a currency's amounts print at least: its ISO 4217 minor unit (payable amounts, docs/architecture.md
 * "Money": "333.66", "1,200" yen); an unknown code prints cents.
 */
function minorDigitsOf(currency: string): number {
  try {
    return minorUnitDigits(currency);
  } catch {
    return 2;
  }
}

/** A money amount with its currency: "1,234.56 CAD" (en), "1 234,56 $" (fr-CA). */
export function displayMoney(amount: string, currency: string, locale: Locale): string {
  const digits = minorDigitsOf(currency);
  return locale === 'fr-CA'
    ? frenchDecimal(amount, currency, digits)
    : `${englishDecimal(amount, digits)} ${currency}`;
}

/**
 * A money amount without its currency, for tables whose heading names it: "1,234.56", "1 234,56".
 * Given the table's currency, at least its minor unit's digits, as the totals beside it print
 * ("1,200" yen, "12.300" dinars); without one, cents.
 */
export function displayAmount(amount: string, locale: Locale, currency?: string): string {
  const digits = currency === undefined ? 2 : minorDigitsOf(currency);
  return locale === 'fr-CA' ? frenchDecimal(amount, null, digits) : englishDecimal(amount, digits);
}

/** A quantity: 2.0000 prints as 2, 12345.5000 as 12,345.5 (en) or 12 345,5 (fr-CA). */
export function displayQuantity(decimal: string, locale: Locale): string {
  return locale === 'fr-CA' ? frenchDecimal(decimal, null, 0) : englishDecimal(decimal, 0);
}

const dateFormats: Record<Locale, { long: Intl.DateTimeFormat; short: Intl.DateTimeFormat }> = {
  en: {
    long: new Intl.DateTimeFormat('en-CA', { dateStyle: 'long', timeZone: 'UTC' }),
    short: new Intl.DateTimeFormat('en-CA', { month: 'short', day: 'numeric', timeZone: 'UTC' }),
  },
  'fr-CA': {
    long: new Intl.DateTimeFormat('fr-CA', { dateStyle: 'long', timeZone: 'UTC' }),
    short: new Intl.DateTimeFormat('fr-CA', { month: 'short', day: 'numeric', timeZone: 'UTC' }),
  },
};

/** Days written so far, per locale and form (a page writes the same few dozen days). */
const writtenDays = new Map<string, string>();

function writeDay(date: string, locale: Locale, form: 'long' | 'short'): string {
  const day = date.slice(0, 10);
  return remembered(writtenDays, `${locale}|${form}|${day}`, () =>
    dateFormats[locale][form].format(new Date(`${day}T00:00:00Z`)),
  );
}

/** A UTC calendar day (YYYY-MM-DD, or the day of an ISO timestamp): "March 1, 2026", "1 mars 2026". */
export function displayDate(date: string, locale: Locale): string {
  return writeDay(date, locale, 'long');
}

/** A day without its year, for chart axes: "Mar 1", "1 mars". */
export function displayShortDate(date: string, locale: Locale): string {
  return writeDay(date, locale, 'short');
}
