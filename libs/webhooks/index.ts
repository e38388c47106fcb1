export {
  getWebhookEvent,
  listWebhookEvents,
  retryWebhookEvent,
  type WebhookEventFilters,
} from './delivery-history.js';
export { type DispatcherSettings, WebhookDispatcher } from './dispatcher.js';
export {
  createEndpoint,
  deleteEndpoint,
  type EndpointPolicy,
  getEndpoint,
  listEndpoints,
  updateEndpoint,
} from './endpoints.js';
export { endpointReceives } from './event-matching.js';
export { fanOutOutbox } from './outbox-fan-out.js';
export { USER_AGENT } from './payload.js';
export { generateSigningSecret, signPayload, verifySignature } from './signing.js';
export { type HostResolver, type ResolvedAddress, systemResolver } from './ssrf-guard.js';
export { RESPONSE_BODY_CHARACTERS } from './webhook-sender.js';
