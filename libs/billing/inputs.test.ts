import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import { moneyInput, parseInput, quantityInput } from './inputs.js';

const Price = z.object({ unit_price: moneyInput, up_to: quantityInput.optional() });

describe('decimal inputs', () => {
  it('keeps decimal strings exactly and accepts whole JSON numbers', () => {
    expect(parseInput(Price, { unit_price: '99999999999.99999999', up_to: '9007199254740993' })).toEqual({
      unit_price: '99999999999.99999999',
      up_to: '9007199254740993',
    });
    expect(parseInput(Price, { unit_price: 25, up_to: 1000 })).toEqual({ unit_price: '25', up_to: '1000' });
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
