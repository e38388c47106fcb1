import { describe, expect, it } from 'vitest';
import { isClickHouseOutage } from './read-stores.js';

const withCode = (code: unknown, message = 'request failed') => Object.assign(new Error(message), { code });

describe('isClickHouseOutage', () => {
  it('is true for a connection refused, reset, timed out, unreachable, unresolved or broken', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']) {
      expect(isClickHouseOutage(withCode(code)), code).toBe(true);
    }
  });

  it('is true for the messages the client gives such failures without a code', () => {
    for (const message of [
      'connect ECONNREFUSED 127.0.0.1:8123',
      'read ECONNRESET',
      'socket hang up',
      'Timeout error.',
      'fetch failed',
    ]) {
      expect(isClickHouseOutage(new Error(message)), message).toBe(true);
    }
  });

  it("is false for ClickHouse's own error answers (numeric codes) and codes that only contain an outage's", () => {
    expect(isClickHouseOutage(withCode('60', 'Table usage.events does not exist'))).toBe(false);
    expect(isClickHouseOutage(withCode('241', 'Memory limit (total) exceeded'))).toBe(false);
    expect(isClickHouseOutage(withCode('XECONNREFUSED'))).toBe(false);
    expect(isClickHouseOutage(withCode('ECONNREFUSEDX'))).toBe(false);
    expect(isClickHouseOutage(withCode(111))).toBe(false);
  });

  it('is false for anything that is not an error', () => {
    for (const value of [null, undefined, 'ECONNREFUSED', {}]) expect(isClickHouseOutage(value)).toBe(false);
  });
});
