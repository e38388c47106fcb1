export {
  getWebhookEvent,
  listWebhookEvents,
  recoverWebhookEvents,
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
  rotateSecret,
  updateEndpoint,
} from './endpoints.js';
export { endpointReceives } from './event-matching.js';
export { fanOutOutbox } from './outbox-fan-out.js';
export { USER_AGENT } from './payload.js';
export {
  generateSigningSecret,
  signingKeyId,
  signPayload,
  signStandard,
  verifySignature,
} from './signing.js';
export { type HostResolver, type ResolvedAddress, systemResolver } from './ssrf-guard.js';
export { RESPONSE_BODY_CHARACTERS } from './webhook-sender.js';
