import { describe, expect, it } from 'vitest';
import { isConnectionFailure, isUniqueViolation } from './pg-errors.js';

const withCode = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('isConnectionFailure', () => {
  it('is true for a socket that was refused, reset or timed out, or a name that did not resolve', () => {
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'EPIPE',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENOTFOUND',
      'EAI_AGAIN',
    ]) {
      expect(isConnectionFailure(withCode(code)), code).toBe(true);
    }
  });

  it('is true for Postgres shutting down, starting up or out of connections, and any connection exception (08)', () => {
    for (const code of ['57P01', '57P02', '57P03', '53300', '08006', '08001']) {
      expect(isConnectionFailure(withCode(code)), code).toBe(true);
    }
  });

  it("is true for pg's own codeless errors of a lost or unobtainable connection", () => {
    expect(isConnectionFailure(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionFailure(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isConnectionFailure(new Error('Query read timeout'))).toBe(true);
    expect(
      isConnectionFailure(new Error('Client has encountered a connection error and is not queryable')),
    ).toBe(true);
  });

  it('is false for the other classes starting with 0, and for those words inside another message', () => {
    // only class 08 is a connection exception; 0A (feature not supported) and 0B would recur on retry
    for (const code of ['0A000', '0B000', '09000', '00000']) {
      expect(isConnectionFailure(withCode(code)), code).toBe(false);
    }
    expect(isConnectionFailure(new Error('relation "Connection terminated" does not exist'))).toBe(false);
  });

  it('is false for a refusal of the statement itself, which a retry would meet again', () => {
    for (const code of ['23505', '23503', '42P01', '40001', '57014', 'ENOENT']) {
      expect(isConnectionFailure(withCode(code, 'Connection terminated')), code).toBe(false);
    }
    expect(isConnectionFailure(new Error('syntax error at or near "SELEC"'))).toBe(false);
    expect(isConnectionFailure({ code: 'ECONNREFUSED' })).toBe(false);
  });
});

describe('isUniqueViolation', () => {
  it('matches 23505, and the constraint when one is named', () => {
    const violation = Object.assign(new Error('duplicate key'), {
      code: '23505',
      constraint: 'invoices_number_key',
    });
    expect(isUniqueViolation(violation)).toBe(true);
    expect(isUniqueViolation(violation, 'invoices_number_key')).toBe(true);
    expect(isUniqueViolation(violation, 'customers_email_key')).toBe(false);
    expect(isUniqueViolation(withCode('23503'))).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
  });
});
