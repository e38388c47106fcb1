import { WEBHOOK_USER_AGENT, type WebhookDeliveryHeaders } from '../schemas/index.js';
import { type SigningSecret, signPayload, signStandard } from './signing.js';

export const USER_AGENT = WEBHOOK_USER_AGENT;

/**
 * The compact JSON body of one delivery. Built once when the webhook event is created and stored
 * as text: every attempt sends (and signs) exactly these bytes.
 */
export function buildPayload(event: {
  deliveryId: string;
  type: string;
  occurredAt: Date;
  data: unknown;
}): string {
  return JSON.stringify({
    id: event.deliveryId,
    type: event.type,
    created: Math.floor(event.occurredAt.getTime() / 1000),
    data: event.data,
  });
}

/** The secrets an attempt is signed with: the endpoint's current one, and the previous one during a rotation. */
export interface SigningSecrets {
  current: SigningSecret;
  previous?: SigningSecret | undefined;
}

/** Which secrets signed an attempt, by key id, per header (what the attempt history shows). */
export interface SignatureKeyIds {
  service: string;
  standard: string[];
}

/**
 * The headers of one attempt of `payload`, made at `timestamp` (Unix seconds): the spec's, signed
 * with the current secret, and the Standard Webhooks ones, signed with every secret given.
 */
export function deliveryHeaders(delivery: {
  deliveryId: string;
  type: string;
  payload: string;
  timestamp: number;
  secrets: SigningSecrets;
}): { headers: WebhookDeliveryHeaders & { 'content-type': string }; keyIds: SignatureKeyIds } {
  const { current, previous } = delivery.secrets;
  const message = { id: delivery.deliveryId, timestamp: delivery.timestamp, body: delivery.payload };
  const standard = previous
    ? `${signStandard(current.secret, message)} ${signStandard(previous.secret, message)}`
    : signStandard(current.secret, message);
  return {
    headers: {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'x-service-event': delivery.type,
      'x-service-delivery': delivery.deliveryId,
      'x-service-signature': signPayload(current.secret, delivery.payload),
      'webhook-id': delivery.deliveryId,
      'webhook-timestamp': String(delivery.timestamp),
      'webhook-signature': standard,
    },
    keyIds: {
      service: current.keyId,
      standard: previous ? [current.keyId, previous.keyId] : [current.keyId],
    },
  };
}
