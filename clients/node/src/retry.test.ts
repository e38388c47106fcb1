import { describe, expect, it } from 'vitest';
import { isRetryableStatus, parseRetryAfter, retryDelayMs } from './retry.js';

const NOW = Date.parse('2026-11-20T10:00:00Z');

describe('parseRetryAfter', () => {
  it('reads delay-seconds as milliseconds', () => {
    expect(parseRetryAfter('1', NOW)).toBe(1000);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
    expect(parseRetryAfter('0', NOW)).toBe(0);
  });

  it('reads an HTTP-date as the time until it, and a date past as 0', () => {
    expect(parseRetryAfter('Fri, 20 Nov 2026 10:00:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Friday, 20-Nov-26 11:00:00 GMT', NOW)).toBe(3_600_000);
    expect(parseRetryAfter('Fri, 20 Nov 2026 09:59:00 GMT', NOW)).toBe(0);
  });

  it('reads an RFC 850 date of the longest day name, Wednesday', () => {
    expect(parseRetryAfter('Wednesday, 25-Nov-26 10:00:00 GMT', NOW)).toBe(5 * 86_400_000);
  });

  it('reads an asctime date, which names no zone, as UTC whatever the zone of the process', () => {
    const zone = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      expect(parseRetryAfter('Fri Nov 20 10:00:30 2026', NOW)).toBe(30_000);
      // asctime pads a day below 10 with a space
      expect(parseRetryAfter('Sat Nov 21  9:00:00 2026', NOW)).toBe(82_800_000);
      expect(parseRetryAfter('Fri, 20 Nov 2026 10:00:30 GMT', NOW)).toBe(30_000);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('refuses what is neither (a client must not read "1.5" as 1.5 s nor "-1" as now)', () => {
    for (const value of [
      '',
      '1.5',
      '-1',
      '+3',
      '1e3',
      'soon',
      '10 seconds',
      'Fri, 99 Nov 2026 10:00:00 GMT',
    ]) {
      expect(parseRetryAfter(value, NOW), JSON.stringify(value)).toBeUndefined();
    }
  });
});

describe('retryDelayMs', () => {
  const policy = { baseDelayMs: 500, maxDelayMs: 30_000 };

  it('doubles its ceiling per consecutive failure, between half of it and all of it', () => {
    expect([1, 2, 3, 4].map((failures) => retryDelayMs(failures, undefined, policy, () => 0))).toEqual([
      250, 500, 1000, 2000,
    ]);
    expect([1, 2, 3, 4].map((failures) => retryDelayMs(failures, undefined, policy, () => 0.999999))).toEqual(
      [500, 1000, 2000, 4000],
    );
  });

  it('reads a count of failures below 1 as the first failure: never a wait shorter than the first step', () => {
    expect(retryDelayMs(0, undefined, policy, () => 0)).toBe(250);
    expect(retryDelayMs(-3, undefined, policy, () => 0.999999)).toBe(500);
  });

  it('keeps doubling its ceiling up to maxDelayMs, however many steps above baseDelayMs that is', () => {
    const wide = { baseDelayMs: 1, maxDelayMs: 2 ** 20 };
    expect([11, 15, 20, 21, 25].map((failures) => retryDelayMs(failures, undefined, wide, () => 0))).toEqual([
      2 ** 9,
      2 ** 13,
      2 ** 18,
      2 ** 19,
      2 ** 19,
    ]);
  });

  it('never exceeds maxDelayMs without Retry-After, however many failures', () => {
    expect(retryDelayMs(60, undefined, policy, () => 0.999999)).toBe(30_000);
    expect(retryDelayMs(1000, undefined, policy, () => 0)).toBe(15_000);
  });

  it('never retries before Retry-After, and spreads clients over up to half of it after', () => {
    expect(retryDelayMs(1, 1000, policy, () => 0)).toBe(1000);
    expect(retryDelayMs(1, 1000, policy, () => 0.999999)).toBe(1250);
    // a long Retry-After (429 until the top of the hour) is honoured past maxDelayMs
    expect(retryDelayMs(1, 3_600_000, policy, () => 0)).toBe(3_600_000);
    expect(retryDelayMs(10, 3_600_000, policy, () => 0.999999)).toBe(3_615_000);
    // Retry-After: 0 means at once, jitter aside
    expect(retryDelayMs(3, 0, policy, () => 0.999999)).toBe(0);
  });

  it('draws a different delay for different clients (jitter)', () => {
    const delays = new Set(Array.from({ length: 50 }, () => retryDelayMs(4, 1000, policy)));
    expect(delays.size).toBeGreaterThan(10);
  });
});

describe('isRetryableStatus', () => {
  it('retries 408, 429 and 5xx, nothing else', () => {
    expect([408, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([200, 201, 400, 401, 403, 404, 409, 413, 415, 422].some(isRetryableStatus)).toBe(false);
  });
});
