import { describe, expect, it } from 'vitest';
import { decimalLength, writeDecimal } from './decimal.js';

function written(n: number): string {
  const out = Buffer.alloc(40, 0x2e);
  const end = writeDecimal(out, 3, n);
  expect(out.subarray(0, 3).toString()).toBe('...');
  expect(out[end]).toBe(0x2e);
  return out.subarray(3, end).toString();
}

describe('writeDecimal', () => {
  it('writes what String(n) writes, for every digit count up to a safe integer', () => {
    const values = [0, 7, 10, 99, 100, 999_999_999, 1e9, 1e9 + 1, 1_700_000_000_000, 1_000_000_000_009];
    for (let n = 1; n < Number.MAX_SAFE_INTEGER / 10; n *= 10) values.push(n - 1, n, n + 1);
    values.push(Number.MAX_SAFE_INTEGER);
    for (const n of values) {
      expect(written(n), String(n)).toBe(String(n));
      expect(decimalLength(n), String(n)).toBe(String(n).length);
    }
  });

  it('falls back to String(n) for what is not a non-negative safe integer', () => {
    for (const n of [-1, 1.5, 2 ** 60, Number.NaN]) expect(written(n)).toBe(String(n));
  });
});
