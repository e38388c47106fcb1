import { hash, randomBytes } from 'node:crypto';

const KEY_PATTERN = /^sk_(live|test)_[A-Za-z0-9_-]{43}$/;
const DISPLAY_PREFIX_LENGTH = 12;

/** `sk_live_` / `sk_test_` + 32 random bytes in base64url (43 characters). */
export function generateApiKey(environment: 'live' | 'test'): { key: string; hash: string; prefix: string } {
  const key = `sk_${environment}_${randomBytes(32).toString('base64url')}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, DISPLAY_PREFIX_LENGTH) };
}

/**
 * Keys have 256 bits of entropy, so a plain SHA-256 is enough (no salt or slow hash needed). Every
 * request hashes its key: the one-shot `crypto.hash` (Node 20.12) costs a quarter of createHash's.
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

export function looksLikeApiKey(value: string): boolean {
  return KEY_PATTERN.test(value);
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), if any. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
