import { describe, expect, it } from 'vitest';
import { ApiError, statusOf, toErrorBody } from './index.js';

describe('ApiError', () => {
  it("answers each error code with the spec's status", () => {
    expect(
      Object.fromEntries(
        (
          [
            'BAD_REQUEST',
            'UNAUTHORIZED',
            'NOT_FOUND',
            'METHOD_NOT_ALLOWED',
            'REQUEST_TIMEOUT',
            'CONFLICT',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
            'REQUEST_HEADERS_TOO_LARGE',
            'VALIDATION_ERROR',
            'RATE_LIMITED',
            'INTERNAL_SERVER_ERROR',
            'SERVICE_UNAVAILABLE',
          ] as const
        ).map((code) => [code, statusOf(code)]),
      ),
    ).toEqual({
      BAD_REQUEST: 400,
      UNAUTHORIZED: 401,
      NOT_FOUND: 404,
      METHOD_NOT_ALLOWED: 405,
      REQUEST_TIMEOUT: 408,
      CONFLICT: 409,
      PAYLOAD_TOO_LARGE: 413,
      UNSUPPORTED_MEDIA_TYPE: 415,
      REQUEST_HEADERS_TOO_LARGE: 431,
      VALIDATION_ERROR: 422,
      RATE_LIMITED: 429,
      INTERNAL_SERVER_ERROR: 500,
      SERVICE_UNAVAILABLE: 503,
    });
    expect(new ApiError('CONFLICT', 'x').status).toBe(409);
  });

  it('reads Content-Encoding without regard to case or spaces: only identity (or none) is read as sent', () => {
    for (const header of [undefined, '', '  ', 'identity', 'IDENTITY', ' Identity ']) {
      expect(ApiError.ofContentEncoding(header), String(header)).toBeUndefined();
    }
    const refused = ApiError.ofContentEncoding(' GZip ');
    expect(refused).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', status: 415 });
    expect(refused!.message).toBe('Content-Encoding gzip is not supported; send the body uncompressed.');
  });

  it('is a failure to log unless made an expected answer (a drain, a dependency outage)', () => {
    expect(new ApiError('INTERNAL_SERVER_ERROR', 'x').expected).toBe(false);
    expect(ApiError.badRequest('x').expected).toBe(false);
    expect(ApiError.shuttingDown()).toMatchObject({
      expected: true,
      status: 503,
      headers: { 'Retry-After': '1' },
    });
    expect(ApiError.serviceUnavailable('down', 5)).toMatchObject({
      expected: true,
      status: 503,
      headers: { 'Retry-After': '5' },
    });
  });

  it('asks a client to retry a dependency outage after 1 second unless told otherwise, keeping its cause', () => {
    const cause = new Error('connect ECONNREFUSED 10.0.0.5:5432');
    const outage = ApiError.serviceUnavailable('The database is unavailable; retry.', undefined, cause);
    expect(outage).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      status: 503,
      headers: { 'Retry-After': '1' },
    });
    expect(outage.cause).toBe(cause);
    expect(ApiError.serviceUnavailable('down')).not.toHaveProperty('cause');
  });

  it('names the bearer scheme on a 401', () => {
    expect(ApiError.unauthorized()).toMatchObject({ status: 401, headers: { 'WWW-Authenticate': 'Bearer' } });
  });
});

describe('toErrorBody', () => {
  it("gives an ApiError's code, message and details, with the request id", () => {
    const details = [{ field: 'quantity', message: 'Must be greater than 0.', code: 'out_of_range' }];
    expect(toErrorBody(ApiError.validation(details), 'req-1')).toEqual({
      status: 422,
      body: {
        error_code: 'VALIDATION_ERROR',
        detail: 'The request has invalid fields; see details.',
        request_id: 'req-1',
        details,
      },
    });
    expect(toErrorBody(ApiError.notFound('Customer'), 'req-2')).toEqual({
      status: 404,
      body: { error_code: 'NOT_FOUND', detail: 'Customer not found.', request_id: 'req-2' },
    });
  });

  it('turns any other error into a generic 500 that tells nothing of it', () => {
    const { status, body } = toErrorBody(new Error('connect ECONNREFUSED 10.0.0.5:5432'), 'req-3');
    expect(status).toBe(500);
    expect(body).toMatchObject({ error_code: 'INTERNAL_SERVER_ERROR', request_id: 'req-3' });
    expect(Object.keys(body).sort()).toEqual(['detail', 'error_code', 'request_id']);
    expect(body.detail).not.toContain('ECONNREFUSED');
  });
});
