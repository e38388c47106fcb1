export {
  type BillingClient,
  type BillingClientMethod,
  type BillingClientOptions,
  createBillingClient,
  type SuccessData,
} from './api-client.js';
export { BillingApiError, type ErrorBody, type FieldError, UsageEventValidationError } from './errors.js';
export type { components, operations, paths } from './generated/openapi.js';
export { parseRetryAfter, retryDelayMs } from './retry.js';
export type { ReportedUsageEvent, UsageEventInput } from './usage/event.js';
export {
  type CloseResult,
  type FullBufferPolicy,
  MAX_BATCH_EVENTS,
  type RetryReason,
  type UsageRejection,
  UsageReporter,
  type UsageReporterMetrics,
  type UsageReporterOptions,
  type UsageReporterStats,
} from './usage/reporter.js';
export { uuidv7 } from './usage/uuidv7.js';
