import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiError } from '../../errors/index.js';
import { instantInput, moneyInput, parseAmount, parseInput, quantityInput } from './inputs.js';

const Price = z.object({ unit_price: moneyInput, up_to: quantityInput.optional() });

describe('decimal inputs', () => {
  it('keeps decimal strings exactly and accepts whole JSON numbers', () => {
    expect(parseInput(Price, { unit_price: '99999999999.99999999', up_to: '9007199254740993' })).toEqual({
      unit_price: '99999999999.99999999',
      up_to: '9007199254740993',
    });
    expect(parseInput(Price, { unit_price: 25, up_to: 1000 })).toEqual({ unit_price: '25', up_to: '1000' });
  });

  it('refuses a decimal with more than 8 fractional digits rather than rounding it', () => {
    expect(parseInput(Price, { unit_price: '0.12345678' }).unit_price).toBe('0.12345678');
    expect(() => parseInput(Price, { unit_price: '0.123456789' })).toThrow(ApiError);
    expect(() => parseInput(Price, { unit_price: '1', up_to: '1.000000001' })).toThrow(ApiError);
  });

  it('refuses a negative price or quantity, as text or as a JSON number', () => {
    for (const input of [{ unit_price: '-1' }, { unit_price: -5 }, { unit_price: '1', up_to: '-0.5' }]) {
      expect(() => parseInput(Price, input), JSON.stringify(input)).toThrow(ApiError);
    }
  });

  it('refuses JSON numbers that may have lost digits, naming the field', () => {
    // 99999999999.99999999 has already become 100000000000 when JSON.parse hands it over
    for (const input of [{ unit_price: 0.5 }, { unit_price: 1, up_to: 2 ** 53 + 2 }]) {
      let error: unknown;
      try {
        parseInput(Price, input);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).details?.[0]?.message).toMatch(/as a string/);
    }
  });
});

describe('instantInput', () => {
  it('takes dates and date-times with an offset that exist, and refuses the ones Date would roll over', () => {
    expect(instantInput.parse('2024-02-29').toISOString()).toBe('2024-02-29T00:00:00.000Z');
    expect(instantInput.parse('2026-03-01T23:59:59.5-05:00').toISOString()).toBe('2026-03-02T04:59:59.500Z');
    for (const text of [
      '2026-02-29',
      '2026-09-31',
      '2026-13-01',
      '2026-01-01T24:00Z',
      '2026-01-01T10:60Z',
      '2026-01-01T10:00+24:00',
      '2026-01-01T10:00+01:60',
      '2026-01-01T10:00',
    ]) {
      expect(instantInput.safeParse(text).success, text).toBe(false);
    }
  });
});

describe('operator amounts', () => {
  it('parses operator amounts strictly', () => {
    expect(parseAmount('amount', '49.99')).toBe(4_999_000_000n);
    expect(parseAmount('amount', '0', { allowZero: true })).toBe(0n);
    for (const bad of ['-1', '1e3', 'abc', '1.123456789', '', '0', '1234567890123']) {
      expect(() => parseAmount('amount', bad), bad).toThrow(ApiError);
    }
    try {
      parseAmount('amount', '0');
    } catch (error) {
      expect((error as ApiError).details).toEqual([
        { field: 'amount', message: 'Must be greater than zero.', code: 'out_of_range' },
      ]);
    }
  });
});
