import { describe, expect, it } from 'vitest';
import { BillingApiError } from './errors.js';

const NOW = Date.parse('2026-11-20T10:00:00Z');

describe('BillingApiError.fromAnswer', () => {
  it('reads an HTTP-date Retry-After as the time from the moment it is given, not from the clock', () => {
    const error = BillingApiError.fromAnswer(
      429,
      { error_code: 'RATE_LIMITED', detail: 'Too many requests.', request_id: 'req-1' },
      new Headers({ 'retry-after': 'Fri, 20 Nov 2026 10:00:30 GMT' }),
      NOW,
    );
    expect(error).toMatchObject({ status: 429, error_code: 'RATE_LIMITED', retryAfterMs: 30_000 });
  });

  it('names the request in its message only when the answer named one', () => {
    const withId = BillingApiError.fromAnswer(404, {
      error_code: 'NOT_FOUND',
      detail: 'No such customer.',
      request_id: 'req-404',
    });
    expect(withId.message).toBe('404 NOT_FOUND: No such customer. (request req-404)');
    const withoutId = BillingApiError.fromAnswer(404, {
      error_code: 'NOT_FOUND',
      detail: 'No such customer.',
    });
    expect(withoutId.request_id).toBeUndefined();
    expect(withoutId.message).toBe('404 NOT_FOUND: No such customer.');
  });

  it('keeps a body of a single character rather than calling the answer empty', () => {
    expect(BillingApiError.fromAnswer(502, 'x')).toMatchObject({
      error_code: 'UNEXPECTED_RESPONSE',
      detail: 'x',
    });
    expect(BillingApiError.fromAnswer(500, 0)).toMatchObject({
      error_code: 'UNEXPECTED_RESPONSE',
      detail: '0',
    });
    expect(BillingApiError.fromAnswer(500, '')).toMatchObject({ detail: 'HTTP 500 without an error body' });
  });
});
