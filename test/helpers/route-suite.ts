/**
 * The checks every authenticated public route must pass, run the same way on each (like unkey's
 * `runCommonRouteTests`). Call it inside a `describe`, after the file's `beforeAll` built the app:
 *
 *   runCommonRouteTests(
 *     () => ({
 *       api,                                      // from startTestApi()
 *       key: orgA.apiKey,                         // a key of the organization owning the record
 *       request: { method: 'GET', path: `/customers/${customer.id}` },
 *       expectedStatus: 200,                      // what the owner gets (default 200)
 *       crossOrg: {                               // for routes that name a record
 *         path: (id) => `/customers/${id}`,
 *         foreignId: customerOfOrgB.id,           // exists, in another organization
 *         missingId: 987654321,                   // exists nowhere
 *       },
 *     }),
 *     { namesRecord: true },                      // registers the cross-organization test
 *   );
 *
 * The function is called when each test runs, so it may read variables the `beforeAll` sets.
 * It registers these tests:
 * - 401 `UNAUTHORIZED` without a key, with a malformed key and with an unknown well-formed key,
 *   in the spec's error body, without rate-limit headers;
 * - the owner's request succeeds and carries every rate-limit header, `X-RateLimit-Remaining`
 *   counting down;
 * - every response (success, 401, 404) carries a UUID `X-Request-ID` equal to the body's
 *   `request_id` on errors, and a caller's own UUID is echoed;
 * - with `namesRecord`: another organization's id answers exactly like a missing one (status,
 *   `error_code`, `detail` with the id masked), rate-limit headers included.
 */
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect, it } from 'vitest';
import { generateApiKey } from '../../libs/auth/index.js';
import type { TestApi } from './api.js';

export interface RouteSuiteContext {
  api: TestApi;
  /** A key of the organization the request's record belongs to. */
  key: string;
  /** The request, path relative to the base path; `body` for POST/PATCH. */
  request: { method: InjectOptions['method']; path: string; body?: unknown };
  /** Status the owner's request answers (default 200). */
  expectedStatus?: number;
  /** For routes that name a record by id. */
  crossOrg?: {
    path: (id: number | string) => string;
    foreignId: number | string;
    missingId: number | string;
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function send(
  context: RouteSuiteContext,
  options: { path?: string; key?: string; headers?: Record<string, string> } = {},
): Promise<LightMyRequestResponse> {
  const { method, path, body } = context.request;
  return context.api.request({
    method,
    path: options.path ?? path,
    ...(options.key ? { key: options.key } : {}),
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

function expectErrorBody(response: LightMyRequestResponse, status: number, errorCode: string) {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  const body = response.json();
  expect(body).toMatchObject({ error_code: errorCode, detail: expect.any(String) });
  expect(body.request_id).toMatch(UUID);
  expect(body.request_id).toBe(response.headers['x-request-id']);
  expect(JSON.stringify(body)).not.toMatch(/stack|at .*\.ts:\d+/);
  return body as { error_code: string; detail: string; request_id: string; details?: unknown };
}

function expectRateLimitHeaders(response: LightMyRequestResponse): number {
  const limit = Number(response.headers['x-ratelimit-limit']);
  const remaining = Number(response.headers['x-ratelimit-remaining']);
  const reset = Number(response.headers['x-ratelimit-reset']);
  expect(Number.isInteger(limit) && limit > 0, 'X-RateLimit-Limit').toBe(true);
  expect(Number.isInteger(remaining) && remaining >= 0 && remaining < limit, 'X-RateLimit-Remaining').toBe(
    true,
  );
  const now = Date.now() / 1000;
  expect(reset % 3600, 'X-RateLimit-Reset is a top of the UTC hour').toBe(0);
  expect(reset > now && reset <= now + 3600, 'X-RateLimit-Reset within the hour').toBe(true);
  expect(response.headers['ratelimit-policy']).toBe(`"hourly";q=${limit};w=3600`);
  expect(response.headers.ratelimit).toMatch(new RegExp(`^"hourly";r=${remaining};t=\\d+$`));
  return remaining;
}

export function runCommonRouteTests(
  setup: () => RouteSuiteContext,
  options: { /** The route names a record: `setup` returns `crossOrg`. */ namesRecord?: boolean } = {},
): void {
  it('answers 401 UNAUTHORIZED without a key, in the error body, without rate-limit headers', async () => {
    const response = await send(setup());
    expectErrorBody(response, 401, 'UNAUTHORIZED');
    expect(response.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('answers 401 UNAUTHORIZED for a malformed key and for an unknown key', async () => {
    const context = setup();
    for (const key of ['not-a-key', generateApiKey('live').key, `${context.key}x`]) {
      const response = await send(context, { key });
      const body = expectErrorBody(response, 401, 'UNAUTHORIZED');
      expect(body.detail).not.toContain(key);
      expect(response.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });

  it("answers the owner's request with every rate-limit header, counting down", async () => {
    const context = setup();
    const first = await send(context, { key: context.key });
    expect(first.statusCode, first.body).toBe(context.expectedStatus ?? 200);
    const second = await send(context, { key: context.key });
    expect(second.statusCode, second.body).toBe(context.expectedStatus ?? 200);
    expect(expectRateLimitHeaders(second)).toBeLessThan(expectRateLimitHeaders(first));
  });

  it('puts a UUID X-Request-ID on every response and echoes a caller UUID', async () => {
    const context = setup();
    const responses = [await send(context, { key: context.key }), await send(context)];
    if (context.crossOrg) {
      responses.push(
        await send(context, { key: context.key, path: context.crossOrg.path(context.crossOrg.missingId) }),
      );
    }
    for (const response of responses) expect(response.headers['x-request-id']).toMatch(UUID);
    const own = '0b7c5a52-3f43-4d7e-9a0e-6a3f1c2b9d10';
    const echoed = await send(context, { key: context.key, headers: { 'x-request-id': own } });
    expect(echoed.headers['x-request-id']).toBe(own);
  });

  if (!options.namesRecord) return;
  it("answers another organization's id exactly like a missing one", async () => {
    const context = setup();
    if (!context.crossOrg) throw new Error('namesRecord routes need crossOrg in their context');
    const { path, foreignId, missingId } = context.crossOrg;
    const foreign = await send(context, { key: context.key, path: path(foreignId) });
    const missing = await send(context, { key: context.key, path: path(missingId) });
    const masked = (response: LightMyRequestResponse, id: number | string) => {
      const body = expectErrorBody(response, 404, 'NOT_FOUND');
      expectRateLimitHeaders(response);
      return { ...body, request_id: undefined, detail: body.detail.replaceAll(String(id), '<id>') };
    };
    expect(masked(foreign, foreignId)).toEqual(masked(missing, missingId));
    expect(foreign.body).not.toContain('organization');
  });
}
