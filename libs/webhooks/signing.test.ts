import crypto, { createHash, createHmac, randomBytes } from 'node:crypto';
import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  generateSigningSecret,
  keyIdsMemo,
  signingKeyId,
  signPayload,
  signStandard,
  standardKeyOf,
  verifySignature,
} from './signing.js';

afterEach(() => vi.restoreAllMocks());

describe('signing secrets', () => {
  it('are whsec_ + 32 random bytes in standard base64, different every time', () => {
    const secret = generateSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(generateSigningSecret()).not.toBe(secret);
  });

  it('are taken as they are by the standardwebhooks package, which decodes the same key', () => {
    for (let i = 0; i < 50; i++) {
      const secret = generateSigningSecret();
      const message = { id: 'msg_1', timestamp: 1_700_000_000, body: '{}' };
      expect(new Webhook(secret).sign(message.id, new Date(message.timestamp * 1000), message.body)).toBe(
        signStandard(secret, message),
      );
    }
  });

  it('are named by a key id that reveals nothing of them', () => {
    const secret = generateSigningSecret();
    expect(signingKeyId(secret)).toBe(
      `key_${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`,
    );
    expect(signingKeyId(secret)).toMatch(/^key_[0-9a-f]{16}$/);
    expect(signingKeyId(generateSigningSecret())).not.toBe(signingKeyId(secret));
  });
});

describe('keyIdsMemo', () => {
  it('names each secret once per claim: the same entry again for the same secret, another for another', () => {
    const named = keyIdsMemo();
    const secret = generateSigningSecret();
    const first = named(secret);
    expect(first).toEqual({ secret, keyId: signingKeyId(secret) });
    expect(named(secret)).toBe(first);
    const other = generateSigningSecret();
    expect(named(other)).toEqual({ secret: other, keyId: signingKeyId(other) });
    expect(named(secret)).toBe(first);
  });
});

describe('signStandard', () => {
  const body = '{"id":"b5a7","type":"invoice.paid","created":1700000000,"data":{"note":"é ✓"}}';

  it('is v1, and the base64 HMAC-SHA256 of id.timestamp.body keyed with the decoded secret', () => {
    const secret = generateSigningSecret();
    const key = Buffer.from(secret.slice(6), 'base64');
    const expected = createHmac('sha256', key).update(`b5a7.1700000000.${body}`, 'utf8').digest('base64');
    expect(signStandard(secret, { id: 'b5a7', timestamp: 1_700_000_000, body })).toBe(`v1,${expected}`);
  });

  it('signs the same id.timestamp.body message whether the body is given as text or as bytes', () => {
    const secret = generateSigningSecret();
    const message = { id: 'b5a7', timestamp: 1_700_000_000 };
    expect(signStandard(secret, { ...message, body: Buffer.from(body, 'utf8') })).toBe(
      signStandard(secret, { ...message, body }),
    );
  });

  it('keys a secret given without the whsec_ prefix with its whole base64 text, as the package does', () => {
    const bytes = randomBytes(32);
    const bare = bytes.toString('base64');
    expect(standardKeyOf(bare)).toEqual(bytes);
    const message = { id: 'b5a7', timestamp: 1_700_000_000, body };
    expect(signStandard(bare, message)).toBe(signStandard(`whsec_${bare}`, message));
    expect(new Webhook(bare).sign(message.id, new Date(message.timestamp * 1000), body)).toBe(
      signStandard(bare, message),
    );
  });

  it('keys an older base64url secret with the same bytes as its standard base64 spelling', () => {
    // secrets made before were whsec_ + base64url; pick bytes whose base64url has - and _
    let bytes = randomBytes(32);
    while (!/[-_]/.test(bytes.toString('base64url'))) bytes = randomBytes(32);
    const legacy = `whsec_${bytes.toString('base64url')}`;
    const standard = `whsec_${bytes.toString('base64')}`;
    expect(standardKeyOf(legacy)).toEqual(bytes);
    const message = { id: 'b5a7', timestamp: Math.floor(Date.now() / 1000), body };
    const headers = {
      'webhook-id': message.id,
      'webhook-timestamp': String(message.timestamp),
      'webhook-signature': signStandard(legacy, message),
    };
    expect(new Webhook(standard).verify(body, headers)).toEqual(JSON.parse(body));
    // the package cannot decode the base64url spelling itself: hence the conversion in the README
    expect(() => new Webhook(legacy).verify(body, headers)).toThrow();
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
    const compare = vi.spyOn(crypto, 'timingSafeEqual');
    expect(verifySignature(secret, body, signature)).toBe(true);
    expect(compare).toHaveBeenCalledTimes(1);
    expect(verifySignature(secret, body, signature)).toBe(true);
    expect(verifySignature(secret, body.replace('paid', 'pair'), signature)).toBe(false);
    expect(verifySignature(secret, body, signature.slice(0, -1))).toBe(false);
    expect(verifySignature(secret, body, `${signature}0`)).toBe(false);
    expect(verifySignature(secret, body, signature.replace('sha256=', ''))).toBe(false);
  });
});
