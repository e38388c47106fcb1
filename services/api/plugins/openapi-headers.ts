/*
 * The response headers the API sends, as the OpenAPI document declares them, so generated clients
 * can read them: X-Request-ID on every response, the rate-limit headers on every response to a
 * request whose key was counted, Retry-After on 429 and 503, WWW-Authenticate on 401, and Allow on
 * the 405 a method the path does not take answers. test/api/openapi-headers.test.ts checks live
 * responses against what is declared here.
 */

interface HeaderObject {
  description: string;
  required?: boolean;
  schema: Record<string, unknown>;
}

const counter = { type: 'integer', minimum: 0 };

const RATE_LIMIT: Record<string, HeaderObject> = {
  'X-RateLimit-Limit': {
    description: "Requests the organization may make this UTC hour (its plan's, or its override).",
    schema: counter,
  },
  'X-RateLimit-Remaining': { description: 'Requests left this UTC hour, this one counted.', schema: counter },
  'X-RateLimit-Reset': {
    description: 'Unix seconds of the next UTC hour, when the count starts again.',
    schema: counter,
  },
  'RateLimit-Policy': {
    description: 'The same limit as the IETF draft header: `"hourly";q=<limit>;w=3600`.',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'What is left, as the IETF draft header: `"hourly";r=<remaining>;t=<seconds to the reset>`.',
    schema: { type: 'string' },
  },
};

const ALWAYS: Record<string, HeaderObject> = {
  'X-Request-ID': {
    description:
      "The request's id, also `request_id` in an error body: the caller's own X-Request-ID when it is a UUID (lower-cased), else a new one.",
    schema: { type: 'string', format: 'uuid' },
  },
  'Retry-After': {
    description:
      'Seconds to wait before retrying: until the hourly limit resets (429), or until a dependency may be back (503).',
    schema: { type: 'integer', minimum: 1 },
  },
  'WWW-Authenticate': {
    description: 'The authentication scheme the API takes: `Bearer`.',
    schema: { type: 'string', const: 'Bearer' },
  },
  Allow: {
    description: 'The methods the path takes, comma-separated (`GET, HEAD`).',
    schema: { type: 'string' },
  },
};

/** The component of a rate-limit header on a response that carries it only when the key was counted. */
const IF_COUNTED = '-IfCounted';

/**
 * `components.headers`: every header once, required; the rate-limit ones also as `<name>-IfCounted`,
 * not required (a reference cannot change `required`, which belongs to the header object).
 */
export function componentHeaders(): Record<string, HeaderObject> {
  const headers: Record<string, HeaderObject> = {};
  for (const [name, header] of Object.entries({ ...ALWAYS, ...RATE_LIMIT })) {
    headers[name] = { ...header, required: true };
  }
  for (const [name, header] of Object.entries(RATE_LIMIT)) {
    headers[`${name}${IF_COUNTED}`] = {
      ...header,
      description: `${header.description} Sent when the request's key was counted.`,
    };
  }
  return headers;
}

const ref = (component: string) => ({ $ref: `#/components/headers/${component}` });

function rateLimitHeaders(always: boolean): Record<string, { $ref: string }> {
  return Object.fromEntries(
    Object.keys(RATE_LIMIT).map((name) => [name, ref(always ? name : `${name}${IF_COUNTED}`)]),
  );
}

/**
 * The headers of the `status` response of an operation that needs a key (`authenticated`) or
 * takes one (`optional`: counted when given). The rate-limit headers are on every response to a
 * counted request: always on an authenticated operation's 2xx and 4xx but 401, maybe on a 5xx (a
 * dependency that failed before the request was counted leaves them out).
 */
export function headersOf(
  status: string,
  access: 'authenticated' | 'optional',
): Record<string, { $ref: string }> {
  return {
    'X-Request-ID': ref('X-Request-ID'),
    ...(status === '401' ? {} : rateLimitHeaders(access === 'authenticated' && !status.startsWith('5'))),
    ...(status === '429' || status === '503' ? { 'Retry-After': ref('Retry-After') } : {}),
    ...(status === '401' ? { 'WWW-Authenticate': ref('WWW-Authenticate') } : {}),
  };
}

/** `components.responses.MethodNotAllowed`: what any path answers to a method it does not take. */
export function methodNotAllowedResponse(errorSchema: { $ref: string }) {
  return {
    description:
      'A method the path does not take, OPTIONS and TRACE included (there is no CORS): any path of this document ' +
      'answers it so, `Allow` listing the methods it takes. Counted, with the rate-limit headers, when a valid key is given.',
    headers: { Allow: ref('Allow'), 'X-Request-ID': ref('X-Request-ID'), ...rateLimitHeaders(false) },
    content: { 'application/json': { schema: errorSchema } },
  };
}
