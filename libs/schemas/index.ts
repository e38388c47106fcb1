export {
  ALERT_METRICS,
  ALERT_STATUSES,
  Alert,
  type AlertMetric,
  type AlertStatus,
  CreateAlert,
} from './alert.js';
export {
  CREDIT_GRANT_STATUSES,
  CreateCreditGrant,
  CreditBalance,
  CreditGrant,
  CreditGrantListQuery,
  type CreditGrantStatus,
  CreditGrantWithLedger,
  CreditLedgerEntry,
  CreditTopUp,
  CreditTopUpRequest,
} from './credit-grant.js';
export {
  CREDIT_NOTE_REASONS,
  CreateCreditNote,
  CreditNote,
  CreditNoteLine,
  type CreditNoteReason,
  CreditNoteTaxLine,
  VoidedUsageEvent,
  VoidUsageEventRequest,
} from './credit-note.js';
export { CreateCustomer, Customer, UpdateCustomer } from './customer.js';
export { Entitlement } from './entitlement.js';
export { ErrorBody, FieldError } from './error.js';
export {
  canonicalUuid,
  integerIdQuery,
  integerPathId,
  isUuid,
  newRequestId,
  parseIntegerId,
  requestIdFrom,
  uuidPathId,
} from './identifiers.js';
export {
  INVOICE_STATUSES,
  Invoice,
  InvoiceItem,
  InvoiceRecord,
  type InvoiceStatus,
  InvoiceTransaction,
  TAX_TYPES,
  type TaxType,
  TRANSACTION_METHODS,
  TRANSACTION_STATUSES,
  TRANSACTION_TYPES,
  type TransactionMethod,
  type TransactionStatus,
  type TransactionType,
} from './invoice.js';
export { dataListWriter, JSON_CONTENT_TYPE, jsonWriter, listBodyJson } from './json-text.js';
export { API_VERSION, BASE_PATH, Meta } from './meta.js';
export {
  booleanQuery,
  DEFAULT_LIMIT,
  listOf,
  MAX_LIMIT,
  Pagination,
  type PaginationQuery,
  paginationOf,
  paginationQuery,
  single,
} from './pagination.js';
export { CreatePortalSession, LOCALES, PortalSession } from './portal-session.js';
export {
  CURRENCIES,
  countryCode,
  currencyCode,
  date,
  dateTime,
  decimal8,
  HORIZON_MESSAGE,
  HORIZON_MS,
  inputDate,
  integerId,
  integerIdParam,
  money,
  quantity4,
  storable,
  storableText,
  UNSTORABLE_MESSAGE,
  uuid,
  uuidInput,
} from './primitives.js';
export {
  BILLING_PERIODS,
  type BillingPeriod,
  PRICING_MODELS,
  PRICING_MODES,
  PRICING_SCHEMES,
  PRICING_TYPES,
  PRODUCT_CATEGORIES,
  PRODUCT_TYPES,
  Product,
} from './product.js';
export {
  PendingChange,
  PendingChangeItem,
  ProrationLine,
  SUBSCRIPTION_STATUSES,
  Subscription,
  SubscriptionChange,
  SubscriptionChangeItem,
  SubscriptionChangeRequest,
  SubscriptionItem,
  type SubscriptionStatus,
  usageLimitInput,
} from './subscription.js';
export { type UpdateShape, updateInputOf } from './update-input.js';
export {
  CreateUsageEventBatch,
  MAX_USAGE_BATCH_EVENTS,
  UsageEventBatchEnvelope,
  UsageEventBatchItemResult,
  UsageEventBatchResult,
} from './usage-batch.js';
export {
  CreateUsageEvent,
  fractionalDigits,
  idempotencyKey,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  quantityToDecimal,
  USAGE_QUANTITY_SCALE,
  UsageEvent,
} from './usage-event.js';
export {
  DailyUsagePoint,
  SubscriptionUsage,
  SubscriptionUsageItem,
  UpcomingInvoice,
  UpcomingInvoiceLine,
  UsageEventWithStatus,
} from './usage-read-back.js';
export {
  CreatedWebhookEndpoint,
  CreateWebhookEndpoint,
  EMITTED_EVENT_TYPES,
  type EmittedEventType,
  EVENT_TYPES,
  EVENT_WILDCARDS,
  type EventType,
  eventSelector,
  RecoverWebhookEvents,
  RotateWebhookSecret,
  UpdateWebhookEndpoint,
  WEBHOOK_ENDPOINT_STATUSES,
  WEBHOOK_EVENT_STATUSES,
  WebhookAttempt,
  WebhookEndpoint,
  WebhookEvent,
  type WebhookEventStatus,
  WebhookEventWithHistory,
  WebhookRecovery,
} from './webhook.js';
export {
  InvoiceEventData,
  PaymentEventData,
  SubscriptionEventData,
  SubscriptionUpdatedEventData,
  WEBHOOK_PAYLOADS,
  WEBHOOK_USER_AGENT,
  WebhookDeliveryHeaders,
} from './webhook-delivery.js';
