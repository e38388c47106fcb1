import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bearerToken, generateApiKey, hashApiKey, looksLikeApiKey } from './keys.js';

describe('API keys', () => {
  it('have a prefix, 32 random bytes, and a SHA-256 hash', () => {
    const live = generateApiKey('live');
    expect(live.key).toMatch(/^sk_live_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(live.key.slice(8), 'base64url')).toHaveLength(32);
    expect(live.hash).toBe(hashApiKey(live.key));
    expect(live.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(live.prefix).toBe(live.key.slice(0, 12));
    expect(generateApiKey('test').key).toMatch(/^sk_test_/);
    expect(generateApiKey('live').key).not.toBe(live.key);
  });

  it('hash as the exact text: SHA-256 of every byte, case included', () => {
    const key = `sk_live_${'Ab0_-'.repeat(8)}xYz`;
    expect(hashApiKey(key)).toBe(createHash('sha256').update(key).digest('hex'));
    // base64url is case-sensitive: a key with one letter's case changed is another key
    expect(hashApiKey(key.replace('Ab0', 'ab0'))).not.toBe(hashApiKey(key));
    expect(hashApiKey(`${key} `)).not.toBe(hashApiKey(key));
  });

  it('are recognised only in their exact shape', () => {
    expect(looksLikeApiKey(generateApiKey('live').key)).toBe(true);
    expect(looksLikeApiKey('sk_live_short')).toBe(false);
    expect(looksLikeApiKey(`pk_live_${'a'.repeat(43)}`)).toBe(false);
  });

  it('are recognised for both environments, test keys included', () => {
    expect(looksLikeApiKey(generateApiKey('test').key)).toBe(true);
    expect(looksLikeApiKey(`sk_test_${'a'.repeat(43)}`)).toBe(true);
    expect(looksLikeApiKey(`sk_demo_${'a'.repeat(43)}`)).toBe(false);
  });

  it('are not recognised with anything before or after the exact shape', () => {
    const key = generateApiKey('live').key;
    expect(looksLikeApiKey(`${key}a`)).toBe(false);
    expect(looksLikeApiKey(`x${key}`)).toBe(false);
    expect(looksLikeApiKey(`${key}\n`)).toBe(false);
  });

  it('come from a Bearer header', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer  abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    // the scheme must start the header: another scheme's credentials are not a bearer token
    expect(bearerToken('Basic bearer abc')).toBeUndefined();
    expect(bearerToken('XBearer abc')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });

  it('need a space between the scheme and the token, and a token', () => {
    expect(bearerToken('Bearerabc')).toBeUndefined();
    expect(bearerToken('Bearer ')).toBeUndefined();
    expect(bearerToken('Bearer')).toBeUndefined();
    expect(bearerToken('')).toBeUndefined();
    expect(bearerToken(' Bearer abc')).toBe('abc');
  });

  it('are exactly 43 characters of base64url after the environment, no more and no fewer', () => {
    expect(looksLikeApiKey(`sk_live_${'a'.repeat(42)}`)).toBe(false);
    expect(looksLikeApiKey(`sk_live_${'a'.repeat(44)}`)).toBe(false);
    expect(looksLikeApiKey(`sk_live_${'a'.repeat(42)}.`)).toBe(false);
    expect(looksLikeApiKey(`sk_live_${'a'.repeat(42)}+`)).toBe(false);
    expect(looksLikeApiKey(`sk_live_${'-_'.repeat(21)}Z`)).toBe(true);
  });

  it('show a 12-character prefix: the scheme, the environment and 4 characters of the key', () => {
    const { key, prefix } = generateApiKey('test');
    expect(prefix).toHaveLength(12);
    expect(prefix).toBe(`sk_test_${key.slice(8, 12)}`);
  });
});
