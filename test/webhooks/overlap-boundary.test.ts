import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attempt, type PendingDelivery } from '../../libs/webhooks/delivery.js';
import { generateSigningSecret, keyIdsMemo, signStandard } from '../../libs/webhooks/signing.js';
import { WebhookSender } from '../../libs/webhooks/webhook-sender.js';
import { type Receiver, standardSignatures, startReceiver } from './support.js';

/**
 * The previous secret signs while `previous_secret_expires_at` is ahead of the dispatcher's clock,
 * which stamps the attempt (docs/decisions.md, "Secret rotation keeps the previous secret for the
 * overlap"): an attempt stamped at exactly that instant is signed by the new secret only.
 */
describe('a delivery attempt at the edge of a rotation overlap', () => {
  let target: Receiver;
  let sender: WebhookSender;
  const current = generateSigningSecret();
  const previous = generateSigningSecret();
  const expiresAt = new Date(Date.UTC(2026, 0, 1, 12, 0, 0));

  beforeAll(async () => {
    target = await startReceiver();
    sender = new WebhookSender({ timeoutMs: 2000, allowLocalhost: true });
  });
  afterAll(async () => {
    sender?.close();
    await target?.close();
  });

  function pending(): PendingDelivery {
    const named = keyIdsMemo();
    return {
      kind: 'pending',
      eventId: '6f1c0c8e-4b1a-4c55-9d43-2f0b0f3b7e11',
      orgId: 1,
      endpointId: '0b0f3b7e-4b1a-4c55-9d43-2f0b0f3b7e11',
      eventType: 'invoice.paid',
      payload: '{"id":"6f1c0c8e-4b1a-4c55-9d43-2f0b0f3b7e11","type":"invoice.paid","created":1,"data":{}}',
      attempt: 1,
      maxAttempts: 5,
      seriesFirstAttempt: 1,
      lease: '2026-01-01 12:00:00+00',
      endpoint: {
        url: target.url,
        secret: named(current),
        previousSecret: { ...named(previous), expiresAt },
        deliverable: true,
      },
    };
  }

  it('is signed by both secrets one millisecond before the previous one expires', async () => {
    const attempted = await attempt(pending(), sender, new Date(expiresAt.getTime() - 1));
    expect(attempted.outcome.result).toBe('success');
    const [delivery] = await target.waitFor(1);
    const message = {
      id: delivery!.headers['webhook-id'] as string,
      timestamp: Number(delivery!.headers['webhook-timestamp']),
      body: delivery!.body,
    };
    // webhook-timestamp is the attempt's Unix second, truncated (11:59:59.999 is 11:59:59)
    expect(message.timestamp).toBe(expiresAt.getTime() / 1000 - 1);
    expect(standardSignatures(delivery!)).toEqual([
      signStandard(current, message),
      signStandard(previous, message),
    ]);
    expect(attempted.keyIds.standard).toHaveLength(2);
  });

  it('is signed by the new secret only at exactly the instant the previous one expires', async () => {
    const attempted = await attempt(pending(), sender, expiresAt);
    expect(attempted.outcome.result).toBe('success');
    const deliveries = await target.waitFor(2);
    const delivery = deliveries[1]!;
    const timestamp = expiresAt.getTime() / 1000;
    expect(delivery.headers['webhook-timestamp']).toBe(String(timestamp));
    expect(standardSignatures(delivery)).toEqual([
      signStandard(current, { id: delivery.headers['webhook-id'] as string, timestamp, body: delivery.body }),
    ]);
    expect(attempted.keyIds.standard).toEqual([attempted.keyIds.service]);
  });
});
