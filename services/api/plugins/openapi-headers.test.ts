import { describe, expect, it } from 'vitest';
import { componentHeaders, headersOf } from './openapi-headers.js';

const RATE_LIMIT = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
];
/** The component each declared header of a response refers to. */
const componentsOf = (headers: Record<string, { $ref: string }>) =>
  Object.fromEntries(Object.entries(headers).map(([name, { $ref }]) => [name, $ref.split('/').pop()]));

describe('declared response headers', () => {
  it('declares the rate-limit headers required on an authenticated 2xx and 4xx, Retry-After only on 429 and 503', () => {
    for (const status of ['200', '404', '422']) {
      expect(componentsOf(headersOf(status, 'authenticated')), status).toEqual({
        'X-Request-ID': 'X-Request-ID',
        ...Object.fromEntries(RATE_LIMIT.map((name) => [name, name])),
      });
    }
    expect(componentsOf(headersOf('429', 'authenticated'))).toMatchObject({
      'Retry-After': 'Retry-After',
      'X-RateLimit-Limit': 'X-RateLimit-Limit',
    });
  });

  it('declares them only if counted on a 5xx and on an operation whose key is optional', () => {
    for (const [status, access] of [
      ['503', 'authenticated'],
      ['500', 'authenticated'],
      ['200', 'optional'],
    ] as const) {
      const declared = componentsOf(headersOf(status, access));
      for (const name of RATE_LIMIT) expect(declared[name], `${status} ${name}`).toBe(`${name}-IfCounted`);
    }
    expect(componentsOf(headersOf('503', 'authenticated'))['Retry-After']).toBe('Retry-After');
    expect(componentsOf(headersOf('500', 'authenticated'))['Retry-After']).toBeUndefined();
  });

  it('declares a 401 with WWW-Authenticate and without any rate-limit header', () => {
    expect(componentsOf(headersOf('401', 'authenticated'))).toEqual({
      'X-Request-ID': 'X-Request-ID',
      'WWW-Authenticate': 'WWW-Authenticate',
    });
  });

  it('makes every header component required, and its if-counted twin not', () => {
    const components = componentHeaders();
    for (const name of [...RATE_LIMIT, 'X-Request-ID', 'Retry-After', 'WWW-Authenticate', 'Allow']) {
      expect(components[name]?.required, name).toBe(true);
    }
    for (const name of RATE_LIMIT) {
      expect(components[`${name}-IfCounted`]?.required, name).toBeUndefined();
      expect(components[`${name}-IfCounted`]?.description).toMatch(
        /Sent when the request's key was counted\.$/,
      );
    }
  });
});
