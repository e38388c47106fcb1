import { createHash, createHmac, randomBytes } from 'node:crypto';
import { equalInConstantTime } from '../bytes/index.js';

export const SECRET_PREFIX = 'whsec_';
export const SIGNATURE_PREFIX = 'sha256=';
export const STANDARD_SIGNATURE_VERSION = 'v1';

/**
 * A new signing secret: `whsec_` + 32 random bytes in standard base64 (44 characters), the form
 * Standard Webhooks libraries decode. Secrets made before were base64url (43 characters); they
 * keep working (see standardKeyOf).
 */
export function generateSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/**
 * A name for a secret that reveals nothing of it: `key_` + the first 16 hex digits of the SHA-256
 * of the whole secret string. Attempts record which key ids signed them; a receiver holding a
 * secret computes its key id the same way.
 */
export function signingKeyId(secret: string): string {
  return `key_${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;
}

/** A secret with its key id, worked out once for all the attempts that it signs. */
export interface SigningSecret {
  secret: string;
  keyId: string;
}

/** `signingKeyId` remembered per secret: for the deliveries of one claim, which share endpoints. */
export function keyIdsMemo(): (secret: string) => SigningSecret {
  const known = new Map<string, SigningSecret>();
  return (secret) => {
    const remembered = known.get(secret);
    if (remembered) return remembered;
    const named = { secret, keyId: signingKeyId(secret) };
    known.set(secret, named);
    return named;
  };
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
  return equalInConstantTime(signature, signPayload(secret, body));
}

/**
 * The Standard Webhooks key of a secret: the base64-decoded part after `whsec_`. Node's decoder
 * reads both base64 alphabets, so an older base64url secret keys with the same 32 bytes as its
 * standard base64 spelling (`whsec_` + Buffer.from(part, 'base64url').toString('base64')).
 */
export function standardKeyOf(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  return Buffer.from(encoded, 'base64');
}

/**
 * One Standard Webhooks signature: `v1,` + the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`,
 * keyed with the secret's Standard Webhooks key. `timestamp` is in Unix seconds.
 */
export function signStandard(
  secret: string,
  message: { id: string; timestamp: number; body: string | Buffer },
): string {
  const signed =
    typeof message.body === 'string'
      ? `${message.id}.${message.timestamp}.${message.body}`
      : Buffer.concat([Buffer.from(`${message.id}.${message.timestamp}.`), message.body]);
  const mac = createHmac('sha256', standardKeyOf(secret)).update(signed).digest('base64');
  return `${STANDARD_SIGNATURE_VERSION},${mac}`;
}
