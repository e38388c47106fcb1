import crypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { equalInConstantTime } from './constant-time.js';

afterEach(() => vi.restoreAllMocks());

describe('equalInConstantTime', () => {
  it('is true for the same text alone: any change, a prefix, a longer one or another encoding is refused', () => {
    expect(equalInConstantTime('sha256=abc', 'sha256=abc')).toBe(true);
    expect(equalInConstantTime('', '')).toBe(true);
    for (const given of ['sha256=abd', 'sha256=ab', 'sha256=abc0', '', 'SHA256=abc', 'sha256=abç']) {
      expect(equalInConstantTime(given, 'sha256=abc'), given).toBe(false);
    }
  });

  it('compares equal lengths with crypto.timingSafeEqual, not ===', () => {
    const compare = vi.spyOn(crypto, 'timingSafeEqual');
    expect(equalInConstantTime('token-b', 'token-a')).toBe(false);
    expect(equalInConstantTime('token-a', 'token-a')).toBe(true);
    expect(compare).toHaveBeenCalledTimes(2);
    // of another length, nothing is compared (timingSafeEqual would throw)
    expect(equalInConstantTime('token', 'token-a')).toBe(false);
    expect(compare).toHaveBeenCalledTimes(2);
  });
});
