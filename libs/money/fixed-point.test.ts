import { describe, expect, it } from 'vitest';
import {
  addScaled,
  compareScaled,
  divideRoundHalfEven,
  formatMoney,
  formatQuantity,
  formatScaled,
  multiplyScaled,
  parseMoney,
  parseScaled,
  rescale,
} from './index.js';

describe('fixed-point money', () => {
  it('round-trips decimal strings at scale 8', () => {
    expect(formatMoney(parseMoney('12.5'))).toBe('12.50000000');
    expect(formatMoney(parseMoney('-0.00000001'))).toBe('-0.00000001');
    expect(formatMoney(parseMoney('0'))).toBe('0.00000000');
    expect(formatMoney(parseMoney('123456789012.12345678'))).toBe('123456789012.12345678');
  });

  it('rejects non-decimals and excess precision unless asked to round', () => {
    expect(() => parseMoney('1e3')).toThrow(RangeError);
    expect(() => parseMoney('abc')).toThrow(RangeError);
    expect(() => parseMoney('0.000000001')).toThrow(RangeError);
    expect(parseScaled('0.000000015', 8, 'half-even')).toBe(2n);
    expect(parseScaled('0.000000025', 8, 'half-even')).toBe(2n);
  });

  it('needs digits on both sides of a decimal point, and at least one digit', () => {
    for (const text of ['.5', '-.5', '5.', '-5.', '.', '', '-', '+', ' ']) {
      expect(() => parseMoney(text), JSON.stringify(text)).toThrow(RangeError);
    }
  });

  it("refuses to drop a negative value's excess digits unless asked to round", () => {
    // -0.000000015 at scale 9 -> scale 8
    expect(() => rescale(-15n, 9, 8, 'reject')).toThrow(/more than 8 fractional digits/);
    expect(() => rescale(15n, 9, 8, 'reject')).toThrow(/more than 8 fractional digits/);
    expect(rescale(-20n, 9, 8, 'reject')).toBe(-2n);
    expect(rescale(-15n, 9, 8)).toBe(-2n);
  });

  it('adds any number of values, none as 0', () => {
    expect(addScaled()).toBe(0n);
    expect(addScaled(7n)).toBe(7n);
    expect(addScaled(1_250_000_000n, -300_000_000n, 1n)).toBe(950_000_001n);
  });

  it('writes quantities with 4 fractional digits', () => {
    expect(formatQuantity(12_345n)).toBe('1.2345');
    expect(formatQuantity(-5n)).toBe('-0.0005');
  });

  it('rounds half to even in both signs', () => {
    expect(divideRoundHalfEven(5n, 2n)).toBe(2n);
    expect(divideRoundHalfEven(7n, 2n)).toBe(4n);
    expect(divideRoundHalfEven(-5n, 2n)).toBe(-2n);
    expect(divideRoundHalfEven(-7n, 2n)).toBe(-4n);
    expect(divideRoundHalfEven(6n, 4n)).toBe(2n);
    expect(divideRoundHalfEven(-6n, 4n)).toBe(-2n);
    expect(rescale(125n, 2, 1)).toBe(12n);
    expect(rescale(135n, 2, 1)).toBe(14n);
  });

  it('rounds less than a half toward zero and more than a half away, whatever the parity', () => {
    // 1.3 -> 1 and 3.3 -> 3 (odd quotients stay), 1.7 -> 2, in both signs
    expect(divideRoundHalfEven(13n, 10n)).toBe(1n);
    expect(divideRoundHalfEven(33n, 10n)).toBe(3n);
    expect(divideRoundHalfEven(-13n, 10n)).toBe(-1n);
    expect(divideRoundHalfEven(17n, 10n)).toBe(2n);
    expect(divideRoundHalfEven(-17n, 10n)).toBe(-2n);
    // 12.34 -> 12.3; 0.000000013 -> 0.00000001
    expect(rescale(1234n, 2, 1)).toBe(123n);
    expect(parseScaled('0.000000013', 8, 'half-even')).toBe(1n);
  });

  it('multiplies at mixed scales without a float', () => {
    // 0.1 x 0.2 = 0.02 exactly, unlike 0.1 * 0.2 in floating point
    expect(formatMoney(multiplyScaled(parseMoney('0.1'), 8, parseScaled('0.2', 4), 4, 8))).toBe('0.02000000');
    expect(formatMoney(multiplyScaled(parseMoney('19.99'), 8, parseScaled('3', 4), 4, 8))).toBe(
      '59.97000000',
    );
    // the product's digits beyond outScale are rounded half to even, never refused
    expect(multiplyScaled(3n, 8, 5000n, 4, 8)).toBe(2n); // 0.000000015 -> 0.00000002
    expect(multiplyScaled(5n, 8, 5000n, 4, 8)).toBe(2n); // 0.000000025 -> 0.00000002
    expect(multiplyScaled(-3n, 8, 5000n, 4, 8)).toBe(-2n);
  });

  it('reads a plus sign as positive and surrounding spaces as nothing', () => {
    expect(parseMoney('+12.5')).toBe(1_250_000_000n);
    expect(parseMoney('-12.5')).toBe(-1_250_000_000n);
    expect(parseScaled('+0.0001', 4)).toBe(1n);
    expect(parseMoney(' 12.5\n')).toBe(1_250_000_000n);
  });

  it('writes a scale-0 value as a whole number, without a decimal point', () => {
    expect(formatScaled(1234n, 0)).toBe('1234');
    expect(formatScaled(-7n, 0)).toBe('-7');
    expect(formatScaled(0n, 0)).toBe('0');
  });

  it('rounds half to even by a negative divisor too, the sign of the quotient from both', () => {
    // 5 / -2 = -2.5 -> -2; 7 / -2 = -3.5 -> -4; -7 / -2 = 3.5 -> 4; 7 / -4 = -1.75 -> -2
    expect(divideRoundHalfEven(5n, -2n)).toBe(-2n);
    expect(divideRoundHalfEven(7n, -2n)).toBe(-4n);
    expect(divideRoundHalfEven(-7n, -2n)).toBe(4n);
    expect(divideRoundHalfEven(7n, -4n)).toBe(-2n);
    expect(() => divideRoundHalfEven(1n, 0n)).toThrow(RangeError);
  });

  it('compares two values, equal ones as 0', () => {
    expect(compareScaled(1n, 2n)).toBe(-1);
    expect(compareScaled(2n, 1n)).toBe(1);
    expect(compareScaled(-5n, -5n)).toBe(0);
  });
});
