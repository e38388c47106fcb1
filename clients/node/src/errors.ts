import type { components } from './generated/openapi.js';
import { parseRetryAfter } from './retry.js';

/** The service's error body: `{ error_code, detail, request_id, details? }`. */
export type ErrorBody = components['schemas']['Error'];
/** One failing field of a validation error. */
export type FieldError = components['schemas']['FieldError'];

/**
 * Every error answer of the service, as one type: the HTTP status and the error body's fields
 * (`error_code`, `detail`, `request_id`, `details`). Thrown by the API client for any answer that
 * is not 2xx, and handed to a usage reporter's `onRejected` for an event the service refused.
 */
export class BillingApiError extends Error {
  override readonly name = 'BillingApiError';
  /** The HTTP status (for an event of a batch: the status that event alone would have got). */
  readonly status: number;
  /** `VALIDATION_ERROR`, `NOT_FOUND`, `RATE_LIMITED`, ...; `UNEXPECTED_RESPONSE` when the body was not an error body. */
  readonly error_code: string;
  readonly detail: string;
  /** The request's id (also its `X-Request-ID` header): quote it when asking about a failure. */
  readonly request_id: string | undefined;
  /** On validation errors, one entry per failing field. */
  readonly details: FieldError[] | undefined;
  /** What `Retry-After` asked for, in milliseconds, when the answer carried one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    status: number,
    body: { error_code: string; detail: string; request_id?: string | undefined; details?: FieldError[] },
    retryAfterMs?: number,
  ) {
    super(
      `${status} ${body.error_code}: ${body.detail}${body.request_id ? ` (request ${body.request_id})` : ''}`,
    );
    this.status = status;
    this.error_code = body.error_code;
    this.detail = body.detail;
    this.request_id = body.request_id;
    this.details = body.details;
    this.retryAfterMs = retryAfterMs;
  }

  /**
   * The error of an answer, from its status, its body (parsed JSON, or text) and its headers. A
   * body that is not the service's error body (a proxy's page, say) keeps its first characters
   * in `detail`, so the error still says what came back.
   */
  static fromAnswer(status: number, body: unknown, headers?: Headers, nowMs = Date.now()): BillingApiError {
    const retryAfter = headers?.get('retry-after');
    const retryAfterMs = retryAfter == null ? undefined : parseRetryAfter(retryAfter, nowMs);
    if (isErrorBody(body)) return new BillingApiError(status, body, retryAfterMs);
    const text = typeof body === 'string' ? body : body === undefined ? '' : JSON.stringify(body);
    return new BillingApiError(
      status,
      {
        error_code: 'UNEXPECTED_RESPONSE',
        detail: text ? text.slice(0, 200) : `HTTP ${status} without an error body`,
        request_id: headers?.get('x-request-id') ?? undefined,
      },
      retryAfterMs,
    );
  }
}

/** Thrown by `UsageReporter.report` for an event the service would refuse; nothing was buffered. */
export class UsageEventValidationError extends TypeError {
  override readonly name = 'UsageEventValidationError';
  readonly error_code = 'VALIDATION_ERROR';
  /** One entry per failing field, in the service's shape. */
  readonly details: FieldError[];

  constructor(details: FieldError[]) {
    super(`invalid usage event: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`);
    this.details = details;
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null) return false;
  const { error_code, detail } = body as Record<string, unknown>;
  return typeof error_code === 'string' && typeof detail === 'string';
}
