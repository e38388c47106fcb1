import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { type KafkaTestBroker, startKafkaTestBroker } from '../helpers/kafka-test-broker.js';
import { type OwnRedisServer, startOwnRedisServer } from '../helpers/redis-server.js';
import { uniqueName } from '../helpers/services.js';
import {
  createUsageItems,
  eventually,
  freshKey,
  startUsageStack,
  type UsageFrontEnd,
  type UsageItems,
  type UsageStack,
  usageRows,
} from './support.js';

/** Kafka API key of Produce, and a non-retriable error (MESSAGE_TOO_LARGE) to inject into it. */
const PRODUCE = 0;
const MESSAGE_TOO_LARGE = 10;
/** Fetch, and an error kafkajs does not retry: the consumer crashes for good. */
const FETCH = 1;
const TOPIC_AUTHORIZATION_FAILED = 29;

/**
 * Dependencies really stopped: a Kafka test broker and a Redis server of this file's own, set
 * down and brought back. The answer is 503 with Retry-After and nothing half-written; once the
 * dependency is back, the client's retry with the same key succeeds, exactly once.
 */
describe('usage ingest when Kafka or Redis fail', () => {
  let broker: KafkaTestBroker;
  let redis: OwnRedisServer;
  let stack: UsageStack;
  let org: TestOrg;
  let items: UsageItems;

  beforeAll(async () => {
    [broker, redis] = await Promise.all([startKafkaTestBroker(), startOwnRedisServer()]);
    const topic = uniqueName('usage_failures');
    await broker.createTopic(topic, 2);
    stack = await startUsageStack('redis+kafka', {
      sinks: true,
      env: { KAFKA_BROKERS: broker.brokers.join(','), KAFKA_USAGE_TOPIC: topic, REDIS_URL: redis.url },
    });
    org = await createTestOrg(stack.api.platform.db);
    items = await createUsageItems(stack.api.platform.db, org.orgId);
  });
  afterAll(async () => {
    await broker?.setUp().catch(() => {});
    await stack?.close();
    await broker?.stop();
    await redis?.stop();
  });

  describe('operations routes of the ingest service', () => {
    const ops = (path: string) => fetch(`http://127.0.0.1:${stack.ingest.port}${path}`);

    it('is live, and ready only while the database, Redis and Kafka answer', async () => {
      const ready = await ops('/readyz');
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({
        status: 'ready',
        checks: { database: { status: 'ok' }, redis: { status: 'ok' }, kafka: { status: 'ok' } },
      });

      await redis.stop();
      try {
        const down = await ops('/readyz');
        expect(down.status).toBe(503);
        expect(await down.json()).toMatchObject({
          status: 'not_ready',
          checks: { redis: { status: 'down' } },
        });
        expect((await ops('/healthz')).status).toBe(200);
      } finally {
        await redis.start();
      }
      await eventually(async () => expect((await ops('/readyz')).status).toBe(200));

      await broker.setDown();
      try {
        const down = await ops('/readyz');
        expect(down.status).toBe(503);
        expect(await down.json()).toMatchObject({ checks: { kafka: { status: 'down' } } });
      } finally {
        await broker.setUp();
      }
      await eventually(async () => expect((await ops('/readyz')).status).toBe(200));
    });

    it('exposes request, ingest and produce metrics after traffic', async () => {
      const uws = stack.frontEnds.find((f) => f.name === 'uws')!;
      const key = freshKey('metrics');
      const send = () =>
        uws.post('/usage/events', {
          key: org.apiKey,
          idempotencyKey: key,
          body: { subscription_item_id: items.metered, quantity: 1 },
        });
      await send();
      await send();
      await uws.post('/usage/events', {
        key: org.apiKey,
        body: { subscription_item_id: items.metered, quantity: 1 },
      });
      const response = await ops('/metrics');
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await response.text();
      expect(text).toMatch(
        /billing_http_requests_total\{service="ingest",method="POST",route="\/api\/public\/v1\/usage\/events",status="201"\} [1-9]/,
      );
      expect(text).toMatch(/billing_http_request_duration_seconds_bucket\{[^}]*service="ingest"/);
      expect(text).toMatch(/billing_ingest_events_total\{outcome="accepted",reason=""\} [1-9]/);
      expect(text).toMatch(/billing_ingest_events_total\{outcome="deduplicated",reason=""\} [1-9]/);
      expect(text).toMatch(/billing_ingest_events_total\{outcome="rejected",reason="BAD_REQUEST"\} [1-9]/);
      expect(text).toMatch(/billing_kafka_produce_duration_seconds_count [1-9]/);
      expect(text).toMatch(/billing_kafka_produce_batch_size_count [1-9]/);
      // the ingest writes straight to the partition leaders, not through kafkajs' producer
      expect(text).toMatch(/billing_kafka_produce_calls_total\{path="leader"\} [1-9]/);
    });

    it('counts every event of a batch by its outcome', async () => {
      const uws = stack.frontEnds.find((f) => f.name === 'uws')!;
      const counted = async () => {
        const text = await (await ops('/metrics')).text();
        const value = (labels: string) =>
          Number(new RegExp(`billing_ingest_events_total\\{${labels}\\} (\\d+)`).exec(text)?.[1] ?? 0);
        return {
          accepted: value('outcome="accepted",reason=""'),
          deduplicated: value('outcome="deduplicated",reason=""'),
          invalid: value('outcome="rejected",reason="VALIDATION_ERROR"'),
        };
      };
      const before = await counted();
      const event = (key: string) => ({
        subscription_item_id: items.metered,
        quantity: 2,
        idempotency_key: key,
      });
      const [first, second] = [freshKey('batch-count'), freshKey('batch-count')];
      const response = await uws.post('/usage/events/batch', {
        key: org.apiKey,
        body: {
          events: [event(first), event(second), event(first), { ...event(freshKey('x')), quantity: -1 }],
        },
      });
      expect(response.status).toBe(200);
      const after = await counted();
      expect({
        accepted: after.accepted - before.accepted,
        deduplicated: after.deduplicated - before.deduplicated,
        invalid: after.invalid - before.invalid,
      }).toEqual({ accepted: 2, deduplicated: 1, invalid: 1 });
    });

    it('never lets its health, readiness or metrics answers be cached', async () => {
      for (const path of ['/healthz', '/readyz', '/metrics']) {
        const response = await ops(path);
        await response.arrayBuffer();
        expect(response.headers.get('cache-control'), path).toBe('no-store');
      }
    });

    it('keeps the operations routes outside the public base path, and answers unknown routes 404', async () => {
      const unknown = await ops('/api/public/v1/customers');
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({
        error_code: 'NOT_FOUND',
        detail: 'No route GET /api/public/v1/customers.',
      });
      const wrongMethod = await ops('/api/public/v1/usage/events');
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get('allow')).toBe('POST');
      expect(wrongMethod.headers.get('x-ratelimit-limit')).toBeNull();
    });

    it('answers HEAD with headers only, so the next response on the connection is not garbled', async () => {
      for (const path of ['/api/public/v1/usage/events', '/api/public/v1/usage/nope']) {
        const socket = net.connect(stack.ingest.port, '127.0.0.1');
        socket.write(`HEAD ${path} HTTP/1.1\r\nHost: ingest\r\nConnection: close\r\n\r\n`);
        const chunks: Buffer[] = [];
        for await (const chunk of socket) chunks.push(chunk as Buffer);
        const [head = '', ...rest] = Buffer.concat(chunks).toString('latin1').split('\r\n\r\n');
        expect(head, path).toMatch(/^HTTP\/1\.1 40[45] /);
        expect(head, path).toMatch(/\r\nX-Request-ID: /i);
        expect(rest.join(''), path).toBe('');
      }
    });

    it('counts a 404 or 405 asked with a valid key, with the rate-limit headers, as the api does', async () => {
      const limited = await createTestOrg(stack.api.platform.db, { plan: 'beta', requestsPerHour: 2 });
      const asked = (path: string) =>
        fetch(`http://127.0.0.1:${stack.ingest.port}${path}`, {
          headers: { authorization: `Bearer ${limited.apiKey}` },
        });
      const unknown = await asked('/api/public/v1/usage/nope');
      const wrongMethod = await asked('/api/public/v1/usage/events');
      expect([unknown.status, wrongMethod.status]).toEqual([404, 405]);
      expect([unknown, wrongMethod].map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['1', '0']);
      expect(wrongMethod.headers.get('allow')).toBe('POST');
      const over = await asked('/api/public/v1/usage/nope');
      expect(over.status).toBe(429);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      // counted in the metrics as the api names a method: upper case
      const metrics = await (await ops('/metrics')).text();
      expect(metrics).toMatch(
        /billing_http_requests_total\{service="ingest",method="GET",route="unmatched",status="404"\} [1-9]/,
      );
    });
  });

  const rowsWithKey = async (key: string) =>
    (await usageRows(stack.api.platform.db, org.orgId)).filter((row) => row.idempotency_key === key);

  it('restarts a sink consumer kafkajs gave up on (an error it does not retry), not ready meanwhile', async () => {
    const [runner] = stack.sinks!.runners;
    const consuming = () =>
      runner!
        .check()
        .probe()
        .then(
          () => true,
          () => false,
        );
    // Fetches refused as not authorized: kafkajs crashes the consumer and does not restart it.
    await broker.injectErrors(FETCH, TOPIC_AUTHORIZATION_FAILED, 1);
    await eventually(async () => expect(await consuming()).toBe(false), 10_000);
    const key = freshKey('after-crash');
    const accepted = await stack.frontEnds[0]!.post('/usage/events', {
      key: org.apiKey,
      idempotencyKey: key,
      body: { subscription_item_id: items.metered, quantity: 1 },
    });
    expect(accepted.status).toBe(201);
    await eventually(async () => {
      expect(await consuming()).toBe(true);
      expect(await rowsWithKey(key)).toHaveLength(1);
    }, 30_000);
  });

  it('answers the first void after Kafka goes down 503 with Retry-After, never 500, and the retry voids it', async () => {
    const key = freshKey('void-kafka-down');
    const posted = await stack.frontEnds[0]!.post('/usage/events', {
      key: org.apiKey,
      idempotencyKey: key,
      body: { subscription_item_id: items.metered, quantity: 3 },
    });
    expect(posted.status).toBe(201);
    await eventually(async () => expect(await rowsWithKey(key)).toHaveLength(1));
    const voidIt = () =>
      stack.api.request({
        method: 'POST',
        path: `/usage/events/${posted.body.data.id}/void`,
        key: org.apiKey,
      });
    await broker.setDown();
    let refused: Awaited<ReturnType<typeof voidIt>>[];
    try {
      // the first call is the one that finds the outage, the second one is refused at once
      refused = [await voidIt(), await voidIt()];
    } finally {
      await broker.setUp();
    }
    for (const response of refused) {
      expect(response.statusCode, response.body).toBe(503);
      expect(response.json()).toMatchObject({
        error_code: 'SERVICE_UNAVAILABLE',
        detail: 'The usage log is unavailable; retry shortly.',
      });
      expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    }
    const stored = await stack.api.platform.db.query('SELECT voided_at FROM usage_events WHERE id = $1', [
      posted.body.data.id,
    ]);
    expect(stored.rows).toEqual([{ voided_at: null }]);
    await waitRetryAfter({ headers: refused[0]!.headers as Record<string, string> });
    const voided = await eventually(async () => {
      const response = await voidIt();
      expect(response.statusCode, response.body).toBe(200);
      return response;
    });
    expect(voided.json().data.status).toBe('VOIDED');
  });

  describe.each(['uws', 'api'] as const)('through %s', (name) => {
    const frontEnd = (): UsageFrontEnd => stack.frontEnds.find((f) => f.name === name)!;
    const post = (key: string, quantity = 1) =>
      frontEnd().post('/usage/events', {
        key: org.apiKey,
        idempotencyKey: key,
        body: { subscription_item_id: items.metered, quantity },
      });

    it('answers 503 with Retry-After while Kafka is down, never 201, and the retry succeeds once it is up', async () => {
      const key = freshKey('kafka-down');
      await broker.setDown();
      let responses: Awaited<ReturnType<typeof post>>[];
      try {
        // Concurrent duplicates of a request that cannot be made durable get no 201 either.
        responses = await Promise.all(Array.from({ length: 10 }, () => post(key)));
      } finally {
        await broker.setUp();
      }
      for (const response of responses) {
        expect(response.status).toBe(503);
        expect(response.body).toMatchObject({ error_code: 'SERVICE_UNAVAILABLE' });
        expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
      }
      await waitRetryAfter(responses[0]!);
      const retry = await post(key, 4);
      expect(retry.status).toBe(201);
      expect(retry.body.data.quantity).toBe(4);
      const again = await post(key, 5);
      expect(again.body.data.id).toBe(retry.body.data.id);
      await eventually(async () =>
        expect((await rowsWithKey(key)).map((row) => [row.id, row.quantity])).toEqual([
          [retry.body.data.id, '4.00000000'],
        ]),
      );
    });

    it('answers 503 when the broker refuses the produce request, and the retry succeeds', async () => {
      const key = freshKey('produce-error');
      await broker.injectErrors(PRODUCE, MESSAGE_TOO_LARGE, 1);
      const refused = await post(key);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBeDefined();
      // The request was counted before the log failed: its rate-limit headers are there.
      expect(refused.headers['x-ratelimit-remaining']).toMatch(/^\d+$/);
      await waitRetryAfter(refused);
      const retry = await post(key);
      expect(retry.status).toBe(201);
      await eventually(async () => expect(await rowsWithKey(key)).toHaveLength(1));
    });

    it('answers 503 for a batch while Kafka is down, and records it whole on retry', async () => {
      const keys = [freshKey('batch-down'), freshKey('batch-down')];
      const events = keys.map((key) => ({
        subscription_item_id: items.metered,
        quantity: 2,
        idempotency_key: key,
      }));
      await broker.setDown();
      let refused: Awaited<ReturnType<UsageFrontEnd['post']>>;
      try {
        refused = await frontEnd().post('/usage/events/batch', { key: org.apiKey, body: { events } });
      } finally {
        await broker.setUp();
      }
      expect(refused.status).toBe(503);
      await waitRetryAfter(refused);
      const retry = await frontEnd().post('/usage/events/batch', { key: org.apiKey, body: { events } });
      expect(retry.body.data.map((r: { status: number }) => r.status)).toEqual([201, 201]);
      await eventually(async () => {
        for (const key of keys) expect(await rowsWithKey(key)).toHaveLength(1);
      });
    });

    it('answers 503 while Redis is stopped, and serves again once it is back', async () => {
      const key = freshKey('redis-down');
      await redis.stop();
      let refused: Awaited<ReturnType<typeof post>>;
      try {
        refused = await post(key);
      } finally {
        await redis.start();
      }
      expect(refused.status).toBe(503);
      expect(refused.body.error_code).toBe('SERVICE_UNAVAILABLE');
      expect(refused.headers['retry-after']).toBeDefined();
      // ioredis reconnects on its own; the client's retry then succeeds.
      const retry = await eventually(async () => {
        const response = await post(key);
        expect(response.status).toBe(201);
        return response;
      });
      await eventually(async () =>
        expect((await rowsWithKey(key)).map((row) => row.id)).toEqual([retry.body.data.id]),
      );
    });
  });
});

/** What a client does with a 503: waits as long as Retry-After says (the service may still be
 * noticing that the dependency is back). */
async function waitRetryAfter(response: { headers: Record<string, string> }): Promise<void> {
  const seconds = Number(response.headers['retry-after']);
  expect(seconds).toBeGreaterThan(0);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}
