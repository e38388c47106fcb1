import { describe, expect, it } from 'vitest';
import {
  BILLABLE_CURRENCIES,
  formatMoney,
  isBillableCurrency,
  isInMinorUnits,
  knownMinorUnitDigits,
  minorUnitDigits,
  parseMoney,
  roundToMinorUnit,
  UnknownCurrencyError,
} from './index.js';

const round = (text: string, currency: string, ratio?: { numerator: bigint; denominator: bigint }) =>
  formatMoney(roundToMinorUnit(parseMoney(text), currency, ratio));

describe('payable amounts in the minor unit', () => {
  it('knows the ISO 4217 exponents and refuses an unknown code', () => {
    expect(minorUnitDigits('CAD')).toBe(2);
    expect(minorUnitDigits('usd')).toBe(2);
    expect(minorUnitDigits('JPY')).toBe(0);
    expect(minorUnitDigits('KWD')).toBe(3);
    expect(() => minorUnitDigits('XXX')).toThrow(RangeError);
    expect(() => minorUnitDigits('CLF')).toThrow(UnknownCurrencyError);
    expect(knownMinorUnitDigits('kwd')).toBe(3);
    expect(knownMinorUnitDigits('XYZ')).toBeUndefined();
  });

  it('lists the billable currencies; a door takes exactly those codes', () => {
    expect(BILLABLE_CURRENCIES).toEqual(expect.arrayContaining(['CAD', 'USD', 'JPY', 'KWD']));
    expect([...BILLABLE_CURRENCIES]).toEqual([...BILLABLE_CURRENCIES].sort());
    for (const code of BILLABLE_CURRENCIES) expect(isBillableCurrency(code), code).toBe(true);
    // not a code of the table, nor one that is only a property of every object
    for (const code of ['XYZ', 'CLF', 'cad', ' CAD', 'constructor', 'toString', '']) {
      expect(isBillableCurrency(code), code).toBe(false);
    }
  });

  it('rounds half-up, a half away from zero, once', () => {
    expect(round('333.6592', 'CAD')).toBe('333.66000000');
    expect(round('14.8955', 'CAD')).toBe('14.90000000');
    expect(round('0.005', 'USD')).toBe('0.01000000');
    expect(round('0.00499999', 'USD')).toBe('0.00000000');
    expect(round('2.345', 'USD')).toBe('2.35000000');
    expect(round('-2.345', 'USD')).toBe('-2.35000000');
    expect(round('-2.34499999', 'USD')).toBe('-2.34000000');
    expect(round('1234.5', 'JPY')).toBe('1235.00000000');
    expect(round('1234.49999999', 'JPY')).toBe('1234.00000000');
    expect(round('1.0005', 'KWD')).toBe('1.00100000');
  });

  it('rounds a ratio of an amount without rounding the amount first', () => {
    // 100 x 1/3 = 33.333... -> 33.33; 100 x 2/3 = 66.666... -> 66.67
    expect(round('100', 'CAD', { numerator: 1n, denominator: 3n })).toBe('33.33000000');
    expect(round('100', 'CAD', { numerator: 2n, denominator: 3n })).toBe('66.67000000');
    // 0.01 x 1/2 = 0.005 exactly: a half, up
    expect(round('0.01', 'CAD', { numerator: 1n, denominator: 2n })).toBe('0.01000000');
    // 0.0149 x 1/1 rounds to 0.01, while rounding 0.0149 first to 0.015 would give 0.02
    expect(round('0.0149', 'CAD')).toBe('0.01000000');
    expect(() => roundToMinorUnit(1n, 'CAD', { numerator: 1n, denominator: 0n })).toThrow(RangeError);
  });

  it('tells amounts with digits below the minor unit', () => {
    expect(isInMinorUnits(parseMoney('333.66'), 'CAD')).toBe(true);
    expect(isInMinorUnits(parseMoney('333.6592'), 'CAD')).toBe(false);
    expect(isInMinorUnits(parseMoney('1200'), 'JPY')).toBe(true);
    expect(isInMinorUnits(parseMoney('1200.5'), 'JPY')).toBe(false);
  });
});
