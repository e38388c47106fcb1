import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitDomainEvent } from '../../libs/events/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { type BillingScenario, insertBillingScenario } from '../helpers/billing-fixtures.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { startOwnRedisServer } from '../helpers/redis-server.js';

/**
 * The live OpenAPI document declares the headers responses carry (X-Request-ID everywhere, the
 * rate-limit headers on counted requests, Retry-After on 429 and 503, WWW-Authenticate on 401,
 * Allow on 405), and live responses of every operation carry exactly what is declared: every
 * required header present, and none of these headers sent where the document does not declare it.
 */

type HeaderRef = { $ref: string };
interface Response {
  headers?: Record<string, HeaderRef | { required?: boolean }>;
}
interface Operation {
  operationId: string;
  security?: unknown[];
  parameters?: { name: string; in: string }[];
  requestBody?: unknown;
  responses: Record<string, Response>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: {
    headers: Record<string, { required?: boolean; schema: unknown }>;
    responses: Record<string, Response>;
  };
}

/** The headers this contract is about; others (Content-Type, Cache-Control...) are not checked here. */
const CHECKED = [
  'x-request-id',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'ratelimit-policy',
  'ratelimit',
  'retry-after',
  'www-authenticate',
  'allow',
];
const RATE_LIMIT = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
];
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

let api: TestApi;
let org: TestOrg;
let scenario: BillingScenario;
let document: Document;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  scenario = await insertBillingScenario(api.platform.db, org.orgId);
  document = (await api.request({ path: '/openapi.json', key: org.apiKey })).json();
});
afterAll(() => api?.close());

function operations(): { path: string; method: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method]! })),
  );
}

/** The declared headers of a response, by lower-case name, with whether each is always sent. */
function declared(response: Response): Map<string, boolean> {
  const headers = new Map<string, boolean>();
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const resolved =
      '$ref' in header ? document.components.headers[(header as HeaderRef).$ref.split('/').pop()!] : header;
    expect(resolved, `${name}: ${JSON.stringify(header)}`).toBeDefined();
    headers.set(name.toLowerCase(), resolved!.required === true);
  }
  return headers;
}

/** Problems of a live response against the response the document declares for it. */
function problemsOf(
  where: string,
  response: LightMyRequestResponse,
  declaredResponse: Response | undefined,
): string[] {
  if (!declaredResponse) return [`${where}: status ${response.statusCode} is not declared`];
  const headers = declared(declaredResponse);
  const problems: string[] = [];
  for (const [name, required] of headers) {
    if (required && response.headers[name] === undefined)
      problems.push(`${where}: ${name} declared, not sent`);
  }
  for (const name of CHECKED) {
    if (response.headers[name] !== undefined && !headers.has(name))
      problems.push(`${where}: ${name} sent, not declared`);
  }
  return problems;
}

describe('the OpenAPI document', () => {
  it('declares X-Request-ID on every response, and the rate-limit headers wherever a request is counted', () => {
    const missing: string[] = [];
    for (const { path, method, operation } of operations()) {
      const authenticated = !(Array.isArray(operation.security) && operation.security.length === 0);
      for (const [status, response] of Object.entries(operation.responses)) {
        const where = `${method.toUpperCase()} ${path} ${status}`;
        const headers = declared(response);
        if (headers.get('x-request-id') !== true) missing.push(`${where}: X-Request-ID`);
        if (status === '401') continue;
        for (const name of RATE_LIMIT) {
          const always = authenticated && !status.startsWith('5');
          if (headers.get(name.toLowerCase()) !== always) missing.push(`${where}: ${name}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('declares Retry-After on every 429 and 503, WWW-Authenticate on every 401, and a 503 wherever a key is needed', () => {
    const missing: string[] = [];
    for (const { path, method, operation } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      const authenticated = !(Array.isArray(operation.security) && operation.security.length === 0);
      if (authenticated && !operation.responses['503']) missing.push(`${where}: no 503`);
      for (const [status, response] of Object.entries(operation.responses)) {
        const headers = declared(response);
        if ((status === '429' || status === '503') && headers.get('retry-after') !== true)
          missing.push(`${where} ${status}: Retry-After`);
        if (status === '401' && headers.get('www-authenticate') !== true)
          missing.push(`${where} ${status}: WWW-Authenticate`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('declares the 405 any path answers, with Allow', () => {
    const response = document.components.responses.MethodNotAllowed!;
    const headers = declared(response);
    expect(headers.get('allow')).toBe(true);
    expect(headers.get('x-request-id')).toBe(true);
    expect(headers.get('x-ratelimit-limit')).toBe(false);
  });
});

describe('live responses', () => {
  /** Real ids for every path parameter, so that operations answer 2xx as well as their errors. */
  async function pathValues(
    check: (method: string, path: string, response: LightMyRequestResponse, operation?: Operation) => void,
  ): Promise<Record<string, Record<string, string>>> {
    const created = async (path: string, response: Promise<LightMyRequestResponse>) => {
      const answered = await response;
      check('post', path, answered, document.paths[path]!.post);
      return answered.json().data;
    };
    const endpoint = await created(
      '/webhook-endpoints',
      api.request({
        method: 'POST',
        path: '/webhook-endpoints',
        key: org.apiKey,
        payload: { url: 'https://hooks.example.com/headers', events: ['invoice.*'] },
      }),
    );
    await api.platform.db.transaction((tx) =>
      emitDomainEvent(tx, { orgId: org.orgId, type: 'invoice.posted', data: { id: 'x' } }),
    );
    const { fanOutOutbox } = await import('../../libs/webhooks/index.js');
    await fanOutOutbox(api.platform.db, { batchSize: 10, maxAttempts: 5 });
    const webhookEvent = (await api.request({ path: '/webhook-events', key: org.apiKey })).json().data[0];
    const metered = scenario.meteredItemIds[0]!;
    const usageEvent = await created(
      '/usage/events',
      api.request({
        method: 'POST',
        path: '/usage/events',
        key: org.apiKey,
        headers: { 'idempotency-key': randomUUID() },
        payload: { subscription_item_id: metered, quantity: 1 },
      }),
    );
    const session = await created(
      '/portal-sessions',
      api.request({
        method: 'POST',
        path: '/portal-sessions',
        key: org.apiKey,
        payload: { customer_id: scenario.customers.quebec.id },
      }),
    );
    const common = {
      customer_id: String(scenario.customers.quebec.id),
      product_id: String(scenario.products.seats),
      subscription_id: String(scenario.subscriptions.active),
      invoice_id: scenario.invoices.POSTED.id,
      endpoint_id: endpoint.id,
      session_id: session.id,
    };
    return {
      usage: { ...common, event_id: usageEvent.id },
      webhook: { ...common, event_id: webhookEvent.id },
    };
  }

  it('carry on every operation, on 2xx and errors alike, exactly the headers the document declares', async () => {
    const problems: string[] = [];
    const seen = new Set<string>();
    const check = (method: string, path: string, response: LightMyRequestResponse, operation?: Operation) => {
      const where = `${method.toUpperCase()} ${path} -> ${response.statusCode}`;
      seen.add(String(response.statusCode));
      const declaredResponse = operation
        ? operation.responses[String(response.statusCode)]
        : document.components.responses.MethodNotAllowed;
      problems.push(...problemsOf(where, response, declaredResponse));
    };
    const values = await pathValues(check);
    // bodies that succeed, where an empty one is refused
    const recover = '/webhook-endpoints/{endpoint_id}/recover';
    check(
      'post',
      recover,
      await api.request({
        method: 'POST',
        path: recover.replace('{endpoint_id}', values.webhook!.endpoint_id!),
        key: org.apiKey,
        payload: { since: '2026-01-01T00:00:00Z' },
      }),
      document.paths[recover]!.post,
    );
    // DELETE ends what it names: ask it last
    const ordered = operations().sort(
      (a, b) => Number(a.method === 'delete') - Number(b.method === 'delete'),
    );
    for (const { path, method, operation } of ordered) {
      const ids = path.startsWith('/usage/') ? values.usage! : values.webhook!;
      const real = path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? '1');
      const unknown = path.replace(/\{(\w+)\}/g, (_, name: string) =>
        ['customer_id', 'product_id', 'subscription_id'].includes(name) ? '999999' : randomUUID(),
      );
      const payload = operation.requestBody ? {} : undefined;
      const ask = (url: string, key?: string, query = '') =>
        api.request({
          method: method.toUpperCase() as 'GET',
          path: `${url}${query}`,
          key,
          ...(payload ? { payload } : {}),
        });
      check(method, path, await ask(real), operation);
      check(method, path, await ask(real, org.apiKey), operation);
      if (path.includes('{')) check(method, path, await ask(unknown, org.apiKey), operation);
      if ((operation.parameters ?? []).some((p) => p.name === 'limit'))
        check(method, path, await ask(real, org.apiKey, '?limit=0'), operation);
    }
    // a method no path takes: 405, with and without a key
    for (const path of ['/customers', '/invoices/{invoice_id}']) {
      const url = path.replace('{invoice_id}', values.webhook!.invoice_id!);
      check('put', path, await api.request({ method: 'PUT', path: url, key: org.apiKey }));
      check('put', path, await api.request({ method: 'PUT', path: url }));
    }
    // the hourly limit spent: 429
    const limited = await createTestOrg(api.platform.db, { plan: 'beta', requestsPerHour: 1 });
    const customers = document.paths['/customers']!.get!;
    check('get', '/customers', await api.request({ path: '/customers', key: limited.apiKey }), customers);
    check('get', '/customers', await api.request({ path: '/customers', key: limited.apiKey }), customers);
    expect(problems).toEqual([]);
    for (const status of ['200', '201', '202', '204', '401', '404', '405', '409', '422', '429']) {
      expect(seen, status).toContain(status);
    }
  });

  it('carry on a 503 what the document declares, while the rate-limit store is down', async () => {
    const redis = await startOwnRedisServer();
    const own = await startTestApi({ env: { REDIS_URL: redis.url } });
    try {
      const owner = await createTestOrg(own.platform.db);
      await redis.stop();
      const response = await own.request({ path: '/customers', key: owner.apiKey });
      await redis.start();
      expect(response.statusCode).toBe(503);
      expect(
        problemsOf('GET /customers', response, document.paths['/customers']!.get!.responses['503']),
      ).toEqual([]);
      expect(response.headers['retry-after']).toBeDefined();
    } finally {
      await own.close().catch(() => {});
      await redis.stop();
    }
  });
});
