import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { type OwnRedisServer, startOwnRedisServer } from '../helpers/redis-server.js';
import { testServices } from '../helpers/services.js';

describe('api service operations routes', () => {
  let redis: OwnRedisServer;
  let api: TestApi;
  let org: TestOrg;

  beforeAll(async () => {
    redis = await startOwnRedisServer();
    api = await startTestApi({ env: { REDIS_URL: redis.url } });
    org = await createTestOrg(api.platform.db);
  });
  afterAll(async () => {
    await api?.close();
    await redis?.stop();
  });

  it('answers /healthz without a key, outside the base path and the OpenAPI document', async () => {
    const response = await api.app.inject({ url: '/healthz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok' });
    expect(response.headers['x-ratelimit-limit']).toBeUndefined();
    const openapi = await api.request({ path: '/openapi.json', key: org.apiKey });
    expect(Object.keys(openapi.json().paths).some((p) => p.includes('healthz'))).toBe(false);
  });

  it('never lets its health, readiness or metrics answers be cached', async () => {
    // a cached "ready" would keep a load balancer sending traffic to an api that lost its database
    for (const url of ['/healthz', '/readyz', '/metrics']) {
      const response = await api.app.inject({ url });
      expect(response.statusCode, url).toBe(200);
      expect(response.headers['cache-control'], url).toBe('no-store');
    }
  });

  it('stays ready while a ClickHouse it does not use (the sinks write it, from Kafka) is down', async () => {
    const distributed = await startTestApi({
      env: {
        REDIS_URL: redis.url,
        KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
        CLICKHOUSE_URL: 'http://127.0.0.1:1',
      },
    });
    try {
      const ready = await distributed.app.inject({ url: '/readyz' });
      expect(ready.statusCode).toBe(200);
      const { checks } = ready.json();
      expect(Object.keys(checks).sort()).toEqual(['database', 'kafka', 'redis']);
      expect(checks).toMatchObject({
        database: { status: 'ok' },
        redis: { status: 'ok' },
        kafka: { status: 'ok' },
      });
    } finally {
      await distributed.close();
    }
  });

  it('is ready while its database and Redis answer, and not ready once Redis stops', async () => {
    const ready = await api.app.inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({
      status: 'ready',
      checks: { database: { status: 'ok' }, redis: { status: 'ok' } },
    });

    await redis.stop();
    const down = await api.app.inject({ url: '/readyz' });
    expect(down.statusCode).toBe(503);
    expect(down.json()).toMatchObject({
      status: 'not_ready',
      checks: { database: { status: 'ok' }, redis: { status: 'down' } },
    });
    expect(await api.app.inject({ url: '/healthz' })).toHaveProperty('statusCode', 200);

    await redis.start();
    await expect
      .poll(async () => (await api.app.inject({ url: '/readyz' })).statusCode, { timeout: 10_000 })
      .toBe(200);
  });

  it('answers 503 within the command timeout while Redis accepts and never answers, and recovers', async () => {
    redis.pause();
    try {
      const started = Date.now();
      const frozen = await api.request({ path: '/customers', key: org.apiKey });
      expect(frozen.statusCode).toBe(503);
      expect(frozen.headers['retry-after']).toBe('1');
      expect(frozen.json()).toMatchObject({ error_code: 'SERVICE_UNAVAILABLE' });
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      redis.resume();
    }
    await expect
      .poll(async () => (await api.request({ path: '/customers', key: org.apiKey })).statusCode, {
        timeout: 10_000,
      })
      .toBe(200);
  });

  it('counts each route pattern and status apart (the children found once per combination)', async () => {
    const route = '/api/public/v1/customers/:customer_id';
    const read = async () => {
      const text = (await api.app.inject({ url: '/metrics' })).body;
      const value = (metric: string, status: number) => {
        const line = text
          .split('\n')
          .find((l) =>
            l.startsWith(`${metric}{service="api",method="GET",route="${route}",status="${status}"}`),
          );
        return line ? Number(line.split(' ').pop()) : 0;
      };
      return [404, 401].flatMap((status) => [
        value('billing_http_requests_total', status),
        value('billing_http_request_duration_seconds_count', status),
      ]);
    };
    const before = await read();
    for (let i = 0; i < 3; i++) await api.request({ path: '/customers/987654', key: org.apiKey });
    for (let i = 0; i < 2; i++) await api.request({ path: '/customers/987654' });
    const after = await read();
    expect(after.map((value, i) => value - before[i]!)).toEqual([3, 3, 2, 2]);
  });

  it('exposes request metrics by route pattern and status in Prometheus format', async () => {
    await api.request({ path: '/customers/123456', key: org.apiKey });
    await api.request({ path: '/meta' });
    const response = await api.app.inject({ url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    const text = response.body;
    expect(text).toMatch(
      /billing_http_requests_total\{service="api",method="GET",route="\/api\/public\/v1\/meta",status="200"\} \d+/,
    );
    expect(text).toContain('billing_http_request_duration_seconds_bucket');
    expect(text).not.toContain('/customers/123456');
    for (const name of [
      'billing_rate_limit_rejections_total',
      'billing_ingest_events_total',
      'billing_kafka_produce_duration_seconds',
      'billing_sink_lag_messages',
      'billing_alert_reads_total',
      'billing_webhook_attempts_total',
      'billing_billing_run_duration_seconds',
      'process_cpu_seconds_total',
    ]) {
      expect(text).toContain(`# TYPE ${name}`);
    }
  });

  it('counts 429s by plan', async () => {
    const limited = await createTestOrg(api.platform.db, { plan: 'beta', requestsPerHour: 1 });
    await api.request({ path: '/meta', key: limited.apiKey });
    const refused = await api.request({ path: '/meta', key: limited.apiKey });
    expect(refused.statusCode).toBe(429);
    const text = (await api.app.inject({ url: '/metrics' })).body;
    expect(text).toMatch(/billing_rate_limit_rejections_total\{plan="beta"\} [1-9]/);
  });
});
