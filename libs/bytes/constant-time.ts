import crypto from 'node:crypto';

/**
 * Whether `given` is exactly `expected`, compared in time that does not depend on where they
 * differ: for secrets (tokens, signatures) an attacker could otherwise guess byte by byte. Only
 * the length shows, and every secret compared here has a length that is public anyway.
 * (`crypto.timingSafeEqual` is read off the module object at each call, so a test can watch it.)
 */
export function equalInConstantTime(given: string, expected: string): boolean {
  const givenBytes = Buffer.from(given);
  const expectedBytes = Buffer.from(expected);
  return givenBytes.length === expectedBytes.length && crypto.timingSafeEqual(givenBytes, expectedBytes);
}
