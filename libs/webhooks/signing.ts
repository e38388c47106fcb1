import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
export const SIGNATURE_PREFIX = 'sha256=';

/** A new signing secret: `whsec_` + 32 random bytes in base64url (43 characters). */
export function generateSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/**
 * The `X-Service-Signature` value: `sha256=` + the hex HMAC-SHA256 of the exact body bytes, keyed
 * with the whole secret string (prefix included), as GitHub-style receivers compute it.
 */
export function signPayload(secret: string, body: string | Buffer): string {
  return `${SIGNATURE_PREFIX}${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** What a receiver does: recompute over the raw body and compare in constant time. */
export function verifySignature(secret: string, body: string | Buffer, signature: string): boolean {
  const expected = Buffer.from(signPayload(secret, body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
