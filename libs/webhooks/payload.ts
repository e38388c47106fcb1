import { signPayload } from './signing.js';

export const USER_AGENT = 'Service-Webhooks/1.0';

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

/** The spec's delivery headers for one attempt of `payload` to an endpoint signed with `secret`. */
export function deliveryHeaders(delivery: {
  deliveryId: string;
  type: string;
  payload: string;
  secret: string;
}): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': delivery.type,
    'x-service-delivery': delivery.deliveryId,
    'x-service-signature': signPayload(delivery.secret, delivery.payload),
  };
}
