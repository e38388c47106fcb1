import { ApiError, type FieldError } from './api-error.js';

export interface ErrorBody {
  error_code: string;
  detail: string;
  request_id: string;
  details?: FieldError[];
}

const INTERNAL_DETAIL =
  'An unexpected error occurred. Retry later; if it persists, contact support with the request_id.';

/**
 * The spec's error body. Only an ApiError's message reaches the client; any other error becomes
 * a generic 500 so internals (SQL, stack traces, hostnames) never leak.
 */
export function toErrorBody(error: unknown, requestId: string): { status: number; body: ErrorBody } {
  if (error instanceof ApiError) {
    const body: ErrorBody = { error_code: error.code, detail: error.message, request_id: requestId };
    if (error.details) body.details = error.details;
    return { status: error.status, body };
  }
  return {
    status: 500,
    body: { error_code: 'INTERNAL_SERVER_ERROR', detail: INTERNAL_DETAIL, request_id: requestId },
  };
}
