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
    // a code read back from an older row, with a stray space, still has its minor unit
    expect(minorUnitDigits(' jpy ')).toBe(0);
    expect(knownMinorUnitDigits('BHD ')).toBe(3);
  });

  it('names its error UnknownCurrencyError, with the code it did not know', () => {
    const error = (() => {
      try {
        return minorUnitDigits('CLF');
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toMatchObject({ name: 'UnknownCurrencyError', currency: 'CLF' });
    expect(String(error)).toBe('UnknownCurrencyError: no ISO 4217 minor unit known for "CLF"');
  });

  it('gives every billable currency its ISO 4217 exponent', () => {
    // docs/decisions.md, "Payable amounts": amounts are rounded to the currency's minor unit (ISO 4217)
    const iso4217: Record<string, number> = {
      AUD: 2,
      BHD: 3,
      CAD: 2,
      CHF: 2,
      CLP: 0,
      EUR: 2,
      GBP: 2,
      ISK: 0,
      JOD: 3,
      JPY: 0,
      KRW: 0,
      KWD: 3,
      MXN: 2,
      OMR: 3,
      TND: 3,
      USD: 2,
    };
    expect([...BILLABLE_CURRENCIES]).toEqual(Object.keys(iso4217));
    for (const [code, digits] of Object.entries(iso4217)) expect(minorUnitDigits(code), code).toBe(digits);
    // the exponent is what rounding and the minor-unit check use
    expect(round('1.0005', 'BHD')).toBe('1.00100000');
    expect(round('1234.5', 'KRW')).toBe('1235.00000000');
    expect(isInMinorUnits(parseMoney('0.125'), 'OMR')).toBe(true);
    expect(isInMinorUnits(parseMoney('0.5'), 'CLP')).toBe(false);
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
    expect(() => roundToMinorUnit(1n, 'CAD', { numerator: 1n, denominator: 0n })).toThrow(
      /positive denominator/,
    );
    expect(() => roundToMinorUnit(1n, 'CAD', { numerator: 1n, denominator: -2n })).toThrow(
      /positive denominator/,
    );
    // an unknown code is refused by name, the reason a parked subscription records
    expect(() => roundToMinorUnit(1n, 'XYZ')).toThrow(UnknownCurrencyError);
    expect(() => roundToMinorUnit(1n, 'XYZ')).toThrow(/no ISO 4217 minor unit known for "XYZ"/);
  });

  it('rounds the sign of the product, whichever factor carries it', () => {
    // 100 x -1/3 = -33.333... -> -33.33; -100 x -2/3 = 66.666... -> 66.67; 0.01 x -1/2 = -0.005 -> -0.01
    expect(round('100', 'CAD', { numerator: -1n, denominator: 3n })).toBe('-33.33000000');
    expect(round('-100', 'CAD', { numerator: -2n, denominator: 3n })).toBe('66.67000000');
    expect(round('0.01', 'CAD', { numerator: -1n, denominator: 2n })).toBe('-0.01000000');
  });

  it('tells amounts with digits below the minor unit', () => {
    expect(isInMinorUnits(parseMoney('333.66'), 'CAD')).toBe(true);
    expect(isInMinorUnits(parseMoney('333.6592'), 'CAD')).toBe(false);
    expect(isInMinorUnits(parseMoney('1200'), 'JPY')).toBe(true);
    expect(isInMinorUnits(parseMoney('1200.5'), 'JPY')).toBe(false);
    expect(isInMinorUnits(parseMoney('-0.125'), 'KWD')).toBe(true);
    // a negative amount (a credit) with digits below the minor unit is not payable either
    expect(isInMinorUnits(parseMoney('-333.6592'), 'CAD')).toBe(false);
    expect(isInMinorUnits(parseMoney('-1200.5'), 'JPY')).toBe(false);
    expect(isInMinorUnits(parseMoney('-0.1255'), 'KWD')).toBe(false);
    expect(() => isInMinorUnits(parseMoney('1'), 'XYZ')).toThrow(UnknownCurrencyError);
  });
});
