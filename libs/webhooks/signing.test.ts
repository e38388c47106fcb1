import { createHmac } from 'node:crypto';
import { verify } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';
import { generateSigningSecret, signPayload, verifySignature } from './signing.js';

describe('signing secrets', () => {
  it('are whsec_ + 32 random bytes in base64url, different every time', () => {
    const secret = generateSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret.slice(6), 'base64url')).toHaveLength(32);
    expect(generateSigningSecret()).not.toBe(secret);
  });
});

describe('signPayload', () => {
  const secret = 'whsec_test-secret';
  const body = '{"id":"b5a7","type":"invoice.paid","created":1700000000,"data":{"id":"x","note":"é"}}';

  it('is sha256= and the hex HMAC-SHA256 of the raw bytes keyed with the secret', () => {
    const expected = createHmac('sha256', secret).update(Buffer.from(body, 'utf8')).digest('hex');
    expect(signPayload(secret, body)).toBe(`sha256=${expected}`);
    expect(signPayload(secret, Buffer.from(body))).toBe(`sha256=${expected}`);
  });

  it('verifies with an independent implementation (@octokit/webhooks-methods)', async () => {
    expect(await verify(secret, body, signPayload(secret, body))).toBe(true);
    expect(await verify(secret, `${body} `, signPayload(secret, body))).toBe(false);
    expect(await verify('whsec_other', body, signPayload(secret, body))).toBe(false);
  });

  it('is checked in constant time, rejecting any change or a header of another length', () => {
    const signature = signPayload(secret, body);
    expect(verifySignature(secret, body, signature)).toBe(true);
    expect(verifySignature(secret, body.replace('paid', 'pair'), signature)).toBe(false);
    expect(verifySignature(secret, body, signature.slice(0, -1))).toBe(false);
    expect(verifySignature(secret, body, `${signature}0`)).toBe(false);
    expect(verifySignature(secret, body, signature.replace('sha256=', ''))).toBe(false);
  });
});
