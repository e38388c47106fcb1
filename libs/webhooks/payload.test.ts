import { describe, expect, it } from 'vitest';
import { buildPayload, deliveryHeaders } from './payload.js';
import { verifySignature } from './signing.js';

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
  it("carries the spec's headers and a signature over the exact payload", () => {
    const payload = '{"id":"9b2c","type":"invoice.paid","created":1,"data":{}}';
    const headers = deliveryHeaders({ deliveryId: '9b2c', type: 'invoice.paid', payload, secret: 'whsec_x' });
    expect(headers).toEqual({
      'content-type': 'application/json',
      'user-agent': 'Service-Webhooks/1.0',
      'x-service-event': 'invoice.paid',
      'x-service-delivery': '9b2c',
      'x-service-signature': expect.stringMatching(/^sha256=[0-9a-f]{64}$/),
    });
    expect(verifySignature('whsec_x', payload, headers['x-service-signature']!)).toBe(true);
  });
});
