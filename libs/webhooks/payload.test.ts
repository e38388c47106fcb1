import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { WebhookDeliveryHeaders } from '../schemas/index.js';
import { buildPayload, deliveryHeaders } from './payload.js';
import { generateSigningSecret, keyIdsMemo, signingKeyId, signStandard, verifySignature } from './signing.js';

const named = keyIdsMemo();

describe('buildPayload', () => {
  it('is compact JSON with id, type, created in Unix seconds and data', () => {
    const body = buildPayload({
      deliveryId: '9b2c',
      type: 'invoice.paid',
      occurredAt: new Date('2026-03-01T12:00:00.900Z'),
      data: { id: 'inv', total: '10.00000000' },
    });
    expect(body).toBe(
      '{"id":"9b2c","type":"invoice.paid","created":1772366400,"data":{"id":"inv","total":"10.00000000"}}',
    );
  });
});

describe('deliveryHeaders', () => {
  const payload = '{"id":"0b9d9d5e-0f4e-4d41-a6a9-0c4d0b1a2f3e","type":"invoice.paid","created":1,"data":{}}';
  const deliveryId = '0b9d9d5e-0f4e-4d41-a6a9-0c4d0b1a2f3e';
  const timestamp = Math.floor(Date.now() / 1000);

  it("carries the spec's headers and the Standard Webhooks ones, each signed over the exact payload", () => {
    const secret = generateSigningSecret();
    const { headers, keyIds } = deliveryHeaders({
      deliveryId,
      type: 'invoice.paid',
      payload,
      timestamp,
      secrets: { current: named(secret) },
    });
    expect(headers).toEqual({
      'content-type': 'application/json',
      'user-agent': 'Service-Webhooks/1.0',
      'x-service-event': 'invoice.paid',
      'x-service-delivery': deliveryId,
      'x-service-signature': expect.stringMatching(/^sha256=[0-9a-f]{64}$/),
      'webhook-id': deliveryId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
    });
    expect(WebhookDeliveryHeaders.parse(headers)).toBeDefined();
    expect(verifySignature(secret, payload, headers['x-service-signature'])).toBe(true);
    expect(new Webhook(secret).verify(payload, headers)).toEqual(JSON.parse(payload));
    expect(keyIds).toEqual({ service: signingKeyId(secret), standard: [signingKeyId(secret)] });
  });

  it('signs webhook-signature with both secrets during a rotation, X-Service-Signature with the current', () => {
    const current = generateSigningSecret();
    const previous = generateSigningSecret();
    const { headers, keyIds } = deliveryHeaders({
      deliveryId,
      type: 'invoice.paid',
      payload,
      timestamp,
      secrets: { current: named(current), previous: named(previous) },
    });
    expect(headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
    expect(WebhookDeliveryHeaders.parse(headers)).toBeDefined();
    for (const secret of [current, previous]) {
      expect(new Webhook(secret).verify(payload, headers)).toEqual(JSON.parse(payload));
    }
    expect(() => new Webhook(generateSigningSecret()).verify(payload, headers)).toThrow();
    expect(verifySignature(current, payload, headers['x-service-signature'])).toBe(true);
    expect(verifySignature(previous, payload, headers['x-service-signature'])).toBe(false);
    expect(keyIds).toEqual({
      service: signingKeyId(current),
      standard: [signingKeyId(current), signingKeyId(previous)],
    });
  });

  it("stamps the attempt's own timestamp, and puts the previous secret's signature second (README)", () => {
    const current = generateSigningSecret();
    const previous = generateSigningSecret();
    const stamped = 1_700_000_000; // long past: not the clock's now
    const { headers } = deliveryHeaders({
      deliveryId,
      type: 'invoice.paid',
      payload,
      timestamp: stamped,
      secrets: { current: named(current), previous: named(previous) },
    });
    const message = { id: deliveryId, timestamp: stamped, body: payload };
    expect(headers['webhook-timestamp']).toBe('1700000000');
    expect(headers['webhook-signature']).toBe(
      `${signStandard(current, message)} ${signStandard(previous, message)}`,
    );
  });
});
