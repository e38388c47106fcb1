/** Every failure a client can see has one of these codes; the HTTP status follows from the code alone. */
const STATUS_BY_CODE = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  REQUEST_HEADERS_TOO_LARGE: 431,
  VALIDATION_ERROR: 422,
  RATE_LIMITED: 429,
  INTERNAL_SERVER_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof STATUS_BY_CODE;

/** One entry of `details`: `field` is a dotted path into the body, or a query parameter's name. */
export interface FieldError {
  field: string;
  message: string;
  code: string;
}

export function statusOf(code: ErrorCode): number {
  return STATUS_BY_CODE[code];
}

/**
 * The one error type of the code base. The domain throws it with a code and a message fit for a
 * client; transports (Fastify, uWS, the console) turn it into their own output in one place each.
 * Anything that is not an ApiError is an internal failure and is never shown to a client.
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details: FieldError[] | undefined;
  /** Extra response headers the error implies, such as Retry-After or Allow. */
  readonly headers: Record<string, string>;
  /**
   * An answer by design, not a failure of this service: it is draining, or a dependency is down
   * (its guard logs the outage once). Not logged per request as a failure.
   */
  readonly expected: boolean;

  constructor(
    code: ErrorCode,
    detail: string,
    options: {
      details?: FieldError[];
      headers?: Record<string, string>;
      cause?: unknown;
      expected?: boolean;
    } = {},
  ) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.details = options.details;
    this.headers = options.headers ?? {};
    this.expected = options.expected ?? false;
  }

  get status(): number {
    return statusOf(this.code);
  }

  static badRequest(detail: string): ApiError {
    return new ApiError('BAD_REQUEST', detail);
  }

  /** HTTP requires a 401 to name the scheme it takes (RFC 9110 §15.5.2): the bearer API key. */
  static unauthorized(
    detail = 'A valid API key is required: send "Authorization: Bearer <API_KEY>".',
  ): ApiError {
    return new ApiError('UNAUTHORIZED', detail, { headers: { 'WWW-Authenticate': 'Bearer' } });
  }

  static notFound(what: string): ApiError {
    return new ApiError('NOT_FOUND', `${what} not found.`);
  }

  static conflict(detail: string): ApiError {
    return new ApiError('CONFLICT', detail);
  }

  static validation(
    details: FieldError[],
    detail = 'The request has invalid fields; see details.',
  ): ApiError {
    return new ApiError('VALIDATION_ERROR', detail, { details });
  }

  /**
   * Refusals of a request body before its content is read, worded once for both front ends (the
   * api maps Fastify's errors to them, the ingest service raises them itself).
   */
  static invalidJson(): ApiError {
    return ApiError.badRequest('The request body is not valid JSON.');
  }

  /**
   * JSON is UTF-8 (RFC 8259 §8.1). Decoding invalid bytes would turn them into U+FFFD, so two
   * different idempotency keys could arrive as one: the body is refused instead.
   */
  static invalidUtf8(): ApiError {
    return ApiError.badRequest('The request body is not valid UTF-8.');
  }

  /**
   * A body sent with a Content-Encoding (other than identity) is a media type we do not take: it
   * is never decompressed (415, RFC 9110 §15.5.16), rather than read as JSON the client wrote badly.
   * Undefined when the header allows the body to be read as sent.
   */
  static ofContentEncoding(header: string | undefined): ApiError | undefined {
    const encoding = header?.trim().toLowerCase();
    if (!encoding || encoding === 'identity') return undefined;
    return new ApiError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Encoding ${encoding} is not supported; send the body uncompressed.`,
    );
  }

  static emptyJsonBody(): ApiError {
    return ApiError.badRequest('The request body is empty but Content-Type is application/json.');
  }

  static payloadTooLarge(): ApiError {
    return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is too large.');
  }

  static unsupportedMediaType(): ApiError {
    return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Type; send application/json.');
  }

  /** What a draining service answers to a request it no longer takes. */
  static shuttingDown(): ApiError {
    return new ApiError('SERVICE_UNAVAILABLE', 'The service is shutting down; retry.', {
      headers: { 'Retry-After': '1' },
      expected: true,
    });
  }

  /** A dependency is down: the client retries; the outage is logged where it is detected. */
  static serviceUnavailable(detail: string, retryAfterSeconds = 1, cause?: unknown): ApiError {
    return new ApiError('SERVICE_UNAVAILABLE', detail, {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause,
      expected: true,
    });
  }
}
