import { readFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import { createConnection } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { type BillingScenario, insertBillingScenario } from '../helpers/billing-fixtures.js';
import { createTestDatabase, relayTo } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { startOwnRedisServer } from '../helpers/redis-server.js';
import { testServices } from '../helpers/services.js';
import { eventually } from '../usage/support.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let api: TestApi;
let org: TestOrg;
let scenario: BillingScenario;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  scenario = await insertBillingScenario(api.platform.db, org.orgId);
});
afterAll(() => api?.close());

describe('errors and headers across the REST routes (docs/architecture.md, "Rules of the contract")', () => {
  it('answers 429 RATE_LIMITED with Retry-After once the hourly limit is spent; the 429 is not counted', async () => {
    const limited = await createTestOrg(api.platform.db, { plan: 'beta', requestsPerHour: 3 });
    const statuses: number[] = [];
    for (const path of ['/customers', '/products', '/invoices', '/subscriptions', '/customers']) {
      const response = await api.request({ path, key: limited.apiKey });
      statuses.push(response.statusCode);
      if (response.statusCode === 429) {
        const retryAfter = Number(response.headers['retry-after']);
        const secondsToHour = 3600 - (Math.floor(Date.now() / 1000) % 3600);
        expect(retryAfter).toBeGreaterThan(0);
        expect(Math.abs(retryAfter - secondsToHour)).toBeLessThanOrEqual(2);
        expect(response.headers['x-ratelimit-remaining']).toBe('0');
        expect(response.json()).toMatchObject({
          error_code: 'RATE_LIMITED',
          request_id: response.headers['x-request-id'],
        });
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it('answers 405 METHOD_NOT_ALLOWED with Allow on the read-only resources', async () => {
    for (const [method, path, allow] of [
      ['DELETE', '/customers', 'GET, HEAD, POST'],
      ['PUT', '/customers/1', 'GET, HEAD'],
      ['POST', '/invoices', 'GET, HEAD'],
      ['DELETE', `/invoices/${scenario.invoices.PAID.id}`, 'GET, HEAD'],
      ['POST', `/invoices/${scenario.invoices.PAID.id}/transactions`, 'GET, HEAD'],
      ['PATCH', '/subscriptions/1', 'GET, HEAD'],
    ] as const) {
      const response = await api.request({ method, path, key: org.apiKey });
      expect(response.statusCode, `${method} ${path}`).toBe(405);
      expect(response.headers.allow).toBe(allow);
      expect(response.headers['x-request-id']).toMatch(UUID);
      expect(response.json().error_code).toBe('METHOD_NOT_ALLOWED');
      expect(response.headers['x-ratelimit-limit']).toBeDefined();
    }
  });

  it('takes an empty body sent as application/json as no body where a route takes none', async () => {
    const json = { 'content-type': 'application/json' };
    const created = await api.request({
      method: 'POST',
      path: '/webhook-endpoints',
      key: org.apiKey,
      headers: json,
      payload: JSON.stringify({ url: 'https://hooks.example.com/empty-body', events: ['invoice.*'] }),
    });
    expect(created.statusCode).toBe(201);
    const endpointId = created.json().data.id;
    const missingEvent = '00000000-0000-4000-8000-000000000000';
    // a route whose body is optional takes an empty body and a JSON null alike as no body
    for (const payload of ['', 'null']) {
      const rotated = await api.request({
        method: 'POST',
        path: `/webhook-endpoints/${endpointId}/rotate-secret`,
        key: org.apiKey,
        headers: json,
        payload,
      });
      expect(rotated.statusCode, `${JSON.stringify(payload)}: ${rotated.body}`).toBe(200);
    }
    for (const [method, path, status] of [
      ['DELETE', `/webhook-endpoints/${endpointId}`, 204],
      ['POST', `/webhook-events/${missingEvent}/retry`, 404],
      // the 405 of a method a path does not take, not a 400 about its body
      ['PUT', '/customers/1', 405],
    ] as const) {
      const response = await api.request({ method, path, key: org.apiKey, headers: json, payload: '' });
      expect(response.statusCode, `${method} ${path}: ${response.body}`).toBe(status);
    }
    // a route that declares a body still refuses an empty one
    for (const [method, path] of [
      ['POST', '/customers'],
      ['POST', '/webhook-endpoints'],
      ['PATCH', `/webhook-endpoints/${endpointId}`],
    ] as const) {
      const response = await api.request({ method, path, key: org.apiKey, headers: json, payload: '' });
      expect(response.statusCode, `${method} ${path}`).toBe(400);
      expect(response.json()).toMatchObject({
        error_code: 'BAD_REQUEST',
        detail: 'The request body is empty but Content-Type is application/json.',
      });
    }
    // a body that is there still goes through Fastify's parser and its prototype-poisoning check
    const poisoned = await api.request({
      method: 'POST',
      path: `/webhook-events/${missingEvent}/retry`,
      key: org.apiKey,
      headers: json,
      payload: '{"__proto__": {"admin": true}}',
    });
    expect(poisoned.statusCode).toBe(400);
    expect(poisoned.json().error_code).toBe('BAD_REQUEST');
  });

  it('answers OPTIONS and TRACE on a known path with 405 and Allow too (there is no CORS preflight)', async () => {
    for (const [method, path, allow] of [
      ['OPTIONS', '/customers', 'GET, HEAD, POST'],
      ['TRACE', '/customers', 'GET, HEAD, POST'],
      ['OPTIONS', '/customers/1', 'GET, HEAD'],
      ['TRACE', `/invoices/${scenario.invoices.PAID.id}`, 'GET, HEAD'],
      ['OPTIONS', '/mcp', 'POST'],
      ['OPTIONS', '/meta', 'GET, HEAD'],
    ] as const) {
      const response = await api.request({ method, path, key: org.apiKey });
      expect(response.statusCode, `${method} ${path}`).toBe(405);
      expect(response.headers.allow, `${method} ${path}`).toBe(allow);
      expect(response.json().error_code).toBe('METHOD_NOT_ALLOWED');
      expect(response.headers['x-ratelimit-limit']).toBeDefined();
    }
    // a browser's preflight is not answered as one: no Access-Control-* header is ever sent
    const preflight = await api.request({
      method: 'OPTIONS',
      path: '/customers',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    expect(preflight.statusCode).toBe(405);
    expect(Object.keys(preflight.headers).filter((name) => name.startsWith('access-control-'))).toEqual([]);
  });

  it('names the bearer scheme in WWW-Authenticate on every 401, as HTTP requires', async () => {
    for (const [path, key] of [
      ['/customers', undefined],
      ['/invoices', 'not-a-key'],
      ['/openapi.json', `${org.apiKey}x`],
      ['/meta', 'not-a-key'],
    ] as const) {
      const response = await api.request({ path, ...(key ? { key } : {}) });
      expect(response.statusCode, path).toBe(401);
      expect(response.headers['www-authenticate'], path).toBe('Bearer');
    }
  });

  it('logs one access line per response: its request id, the route pattern and status, never the query', async () => {
    const response = await api.request({ path: '/customers/999999999?limit=7', key: org.apiKey });
    expect(response.statusCode).toBe(404);
    const requestId = response.headers['x-request-id'];
    // onResponse logs once the reply went out; the run's log is written synchronously
    const lines = await eventually(async () => {
      const found = (await readFile(testServices().runLogFile, 'utf8'))
        .split('\n')
        .filter((line) => line.includes(String(requestId)))
        .map((line) => JSON.parse(line));
      expect(found.length).toBeGreaterThan(0);
      return found;
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      reqId: requestId,
      msg: 'request',
      orgId: org.orgId,
      method: 'GET',
      route: `${BASE_PATH}/customers/:customer_id`,
      status: 404,
    });
    expect(JSON.stringify(lines[0])).not.toContain('limit=7');
  });

  it('answers an unknown route with 404 NOT_FOUND and a request id', async () => {
    const response = await api.request({ path: '/invoices/x/y/z', key: org.apiKey });
    expect(response.statusCode).toBe(404);
    expect(response.json().error_code).toBe('NOT_FOUND');
    expect(response.json().request_id).toBe(response.headers['x-request-id']);
  });

  it("names an unknown route's method and path in the 404, never its query", async () => {
    // a query may carry what a client meant to keep to itself (a token, an email): the answer,
    // like the access log, names the path alone
    const response = await api.request({
      path: '/invoices/x/y/z?email=a%40b.example&limit=7',
      key: org.apiKey,
    });
    expect(response.statusCode).toBe(404);
    expect(response.json().detail).toBe(`No route GET ${BASE_PATH}/invoices/x/y/z.`);
  });

  it('counts 404s of unknown routes and 405s asked with a valid key, with the rate-limit headers; a bad key is still a 404 or 405', async () => {
    const limited = await createTestOrg(api.platform.db, { plan: 'beta', requestsPerHour: 3 });
    const unknown = await api.request({ path: '/nope', key: limited.apiKey });
    const wrongMethod = await api.request({ method: 'DELETE', path: '/customers', key: limited.apiKey });
    expect([unknown.statusCode, wrongMethod.statusCode]).toEqual([404, 405]);
    expect([unknown, wrongMethod].map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['2', '1']);
    expect(unknown.headers['x-ratelimit-limit']).toBe('3');
    for (const request of [
      { path: '/nope', key: 'sk_test_not_a_key' },
      { method: 'DELETE' as const, path: '/customers', key: 'sk_test_not_a_key' },
    ]) {
      const response = await api.request(request);
      expect(response.statusCode).toBe(request.method ? 405 : 404);
      expect(response.headers).not.toHaveProperty('x-ratelimit-limit');
    }
    expect(
      (await api.request({ path: '/customers', key: limited.apiKey })).headers['x-ratelimit-remaining'],
    ).toBe('0');
    const over = await api.request({ path: '/nope', key: limited.apiKey });
    expect(over.statusCode).toBe(429);
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('answers requests the HTTP parser refuses with the error body and X-Request-ID, then closes', async () => {
    const address = await api.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = new URL(address);
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = createConnection({ host: '127.0.0.1', port: Number(port) }, () => socket.end(request));
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
        socket.on('close', () => resolve(answer));
        socket.on('error', reject);
      });
    for (const [request, status, code] of [
      [
        `GET /api/public/v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'REQUEST_HEADERS_TOO_LARGE',
      ],
      [
        'GET /api/public/v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk\x01\r\n\r\n',
        400,
        'BAD_REQUEST',
      ],
      ['FOO /api/public/v1/customers HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'BAD_REQUEST'],
    ] as const) {
      const answer = await raw(request);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head!.split('\r\n')[0]).toBe(`HTTP/1.1 ${status} ${STATUS_CODES[status]}`);
      const requestId = /^x-request-id: (.+)$/im.exec(head!)?.[1];
      expect(requestId).toMatch(UUID);
      expect(JSON.parse(body!)).toEqual({
        error_code: code,
        detail: expect.any(String),
        request_id: requestId,
      });
    }
  });

  it('never answers 500 to hostile input', async () => {
    const cases: [string, number][] = [
      ['/customers/%00', 404],
      ['/customers/1%27%20OR%201=1', 404],
      [`/customers/${'9'.repeat(400)}`, 404],
      ['/invoices/%E2%80%AE', 404],
      [`/invoices/${'a'.repeat(2000)}`, 404],
      ['/invoices/00000000-0000-0000-0000-00000000000g/pdf', 404],
      ['/invoices?status=PAID&status=POSTED', 422],
      ['/invoices?customer_id=1&customer_id=2', 422],
      ['/invoices?limit=1e2', 422],
      ['/invoices?offset=99999999999999999999999', 422],
      ['/subscriptions?status=%00', 422],
      ['/products?active=%00', 422],
      ['/customers?limit=%F0%9F%98%80', 422],
      // unknown query parameters are ignored (docs/decisions.md)
      ['/invoices?status[]=PAID', 200],
    ];
    for (const [path, status] of cases) {
      const response = await api.request({ path, key: org.apiKey });
      expect(response.statusCode, `${path}: ${response.body.slice(0, 300)}`).toBe(status);
      expect(response.headers['x-request-id']).toMatch(UUID);
    }
  });

  it('answers a malformed URL or a body shorter than its Content-Length with 400 BAD_REQUEST', async () => {
    for (const path of ['/customers/%E0%A4%A', '/invoices/%zz/pdf']) {
      const response = await api.request({ path, key: org.apiKey });
      expect(response.statusCode, path).toBe(400);
      expect(response.json(), path).toMatchObject({
        error_code: 'BAD_REQUEST',
        detail: 'The request URL is malformed.',
        request_id: response.headers['x-request-id'],
      });
    }
    const short = await api.request({
      method: 'POST',
      path: '/customers',
      key: org.apiKey,
      headers: { 'content-type': 'application/json', 'content-length': '40' },
      payload: '{"name":"Short"}',
    });
    expect(short.statusCode, short.body).toBe(400);
    expect(short.json()).toMatchObject({
      error_code: 'BAD_REQUEST',
      detail: 'Content-Length does not match the body.',
    });
  });

  it('pages every list route with limit and offset in digits only, one details entry per bad value', async () => {
    const lists = [
      '/customers',
      '/products',
      '/subscriptions',
      '/invoices',
      `/invoices/${scenario.invoices.PAID.id}/transactions`,
      '/webhook-endpoints',
      '/webhook-events',
    ];
    for (const path of lists) {
      const ok = await api.request({ path: `${path}?limit=2&offset=0`, key: org.apiKey });
      expect(ok.statusCode, path).toBe(200);
      expect(ok.json().pagination, path).toMatchObject({ limit: 2, offset: 0 });
      for (const [query, field] of [
        ['limit=1e1', 'limit'],
        ['offset=', 'offset'],
        ['offset=9007199254740993', 'offset'],
      ] as const) {
        const response = await api.request({ path: `${path}?${query}`, key: org.apiKey });
        expect(response.statusCode, `${path}?${query}`).toBe(422);
        expect(
          response.json().details.map((d: { field: string }) => d.field),
          `${path}?${query}`,
        ).toEqual([field]);
      }
      const repeated = await api.request({ path: `${path}?limit=2&limit=3`, key: org.apiKey });
      expect(repeated.statusCode, path).toBe(422);
      expect(repeated.json().details, path).toEqual([
        { field: 'limit', message: 'Give this parameter only once.', code: 'repeated' },
      ]);
    }
  });

  it('keeps a page stable under ties and answers the same page twice', async () => {
    const first = await api.request({ path: '/invoices?limit=3&offset=2', key: org.apiKey });
    const again = await api.request({ path: '/invoices?limit=3&offset=2', key: org.apiKey });
    expect(first.json()).toEqual(again.json());
  });
});

describe('a dependency that is down (docs/architecture.md, "Rules of the contract")', () => {
  function expectUnavailable(response: {
    statusCode: number;
    headers: Record<string, unknown>;
    json(): unknown;
  }) {
    expect(response.statusCode).toBe(503);
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    expect(response.json()).toMatchObject({
      error_code: 'SERVICE_UNAVAILABLE',
      request_id: response.headers['x-request-id'],
    });
  }

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After while the rate-limit store is down, not 500', async () => {
    const redis = await startOwnRedisServer();
    const own = await startTestApi({ env: { REDIS_URL: redis.url } });
    try {
      const owner = await createTestOrg(own.platform.db);
      expect((await own.request({ path: '/customers', key: owner.apiKey })).statusCode).toBe(200);
      await redis.stop();
      expectUnavailable(await own.request({ path: '/customers', key: owner.apiKey }));
      await redis.start();
    } finally {
      await own.close().catch(() => {});
      await redis.stop();
    }
  });

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After while Postgres cannot be reached, not 500', async () => {
    // The api reaches its database through a TCP relay the test can cut: a real lost connection.
    const database = await createTestDatabase('outage');
    const relay = await relayTo(database.url);
    const own = await startTestApi({ env: { DATABASE_URL: relay.url } });
    try {
      const owner = await createTestOrg(own.platform.db);
      expect((await own.request({ path: '/customers', key: owner.apiKey })).statusCode).toBe(200);
      await relay.close();
      expectUnavailable(await own.request({ path: '/customers', key: owner.apiKey }));
    } finally {
      await own.close().catch(() => {});
      await database.drop();
    }
  });
});
