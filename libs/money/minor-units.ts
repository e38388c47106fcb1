import { MONEY_SCALE } from './fixed-point.js';

/**
 * Payable amounts (docs/architecture.md, "Money"): what a customer is asked to pay is a whole number of the
 * currency's minor unit, because no card network, bank or tax authority takes less. Stored and
 * serialized values keep the 8-digit money scale; only their digits below the minor unit are 0.
 */

/** ISO 4217 minor-unit exponents of the currencies the service can price in, and a few more. */
const MINOR_UNIT_DIGITS: Readonly<Record<string, number>> = {
  CAD: 2,
  USD: 2,
  EUR: 2,
  GBP: 2,
  CHF: 2,
  AUD: 2,
  MXN: 2,
  JPY: 0,
  KRW: 0,
  CLP: 0,
  ISK: 0,
  BHD: 3,
  JOD: 3,
  KWD: 3,
  OMR: 3,
  TND: 3,
};

/**
 * The codes of the table above, in order: the currencies money can be billed in. Every door a
 * currency comes in by (products, organizations) checks against this list, so nothing is stored
 * that the billing code cannot round.
 */
export const BILLABLE_CURRENCIES: readonly string[] = Object.keys(MINOR_UNIT_DIGITS).sort();

/** A currency code without a minor unit in the table: nothing in it can be rounded or billed. */
export class UnknownCurrencyError extends RangeError {
  constructor(readonly currency: string) {
    super(`no ISO 4217 minor unit known for ${JSON.stringify(currency)}`);
    this.name = 'UnknownCurrencyError';
  }
}

/** Whether `code` is exactly one of BILLABLE_CURRENCIES (upper case, no spaces). */
export function isBillableCurrency(code: string): boolean {
  return Object.hasOwn(MINOR_UNIT_DIGITS, code);
}

/** Digits after the decimal point of the currency's minor unit; an unknown code is an error. */
export function minorUnitDigits(currency: string): number {
  const digits = knownMinorUnitDigits(currency);
  if (digits === undefined) throw new UnknownCurrencyError(currency);
  return digits;
}

/**
 * The minor unit's digits, or undefined for a code the table does not know: for readers of rows
 * stored before currencies were checked, which must still show (and settle) them.
 */
export function knownMinorUnitDigits(currency: string): number | undefined {
  const code = currency.trim().toUpperCase();
  return Object.hasOwn(MINOR_UNIT_DIGITS, code) ? MINOR_UNIT_DIGITS[code] : undefined;
}

/**
 * THE rounding of payable amounts: numerator / denominator (a money-scale value times an exact
 * ratio, e.g. seconds left over seconds of the period) rounded half-up (a half goes away from
 * zero, so a credit mirrors its charge) to the currency's minor unit, returned at money scale.
 * Taking the ratio before rounding rounds once: a prorated amount is never rounded twice.
 */
export function roundToMinorUnit(
  amount: bigint,
  currency: string,
  ratio: { numerator: bigint; denominator: bigint } = { numerator: 1n, denominator: 1n },
): bigint {
  if (ratio.denominator <= 0n) throw new RangeError('the ratio needs a positive denominator');
  const step = 10n ** BigInt(MONEY_SCALE - minorUnitDigits(currency));
  const numerator = amount * ratio.numerator;
  const denominator = ratio.denominator * step;
  const negative = numerator < 0n;
  const magnitude = negative ? -numerator : numerator;
  const units = (2n * magnitude + denominator) / (2n * denominator);
  return (negative ? -units : units) * step;
}

/** Whether a money-scale value has no digit below the currency's minor unit. */
export function isInMinorUnits(amount: bigint, currency: string): boolean {
  return amount % 10n ** BigInt(MONEY_SCALE - minorUnitDigits(currency)) === 0n;
}
