import { setTimeout as sleep } from 'node:timers/promises';
import { type UsageRejection, UsageReporter } from '@billing-service/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClickHouse, openClickHouse } from '../../libs/clickhouse/index.js';
import { migrateClickHouse } from '../../libs/usage/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { type KafkaTestBroker, startKafkaTestBroker } from '../helpers/kafka-test-broker.js';
import { freePort, type ServiceProcess } from '../helpers/processes.js';
import { type OwnRedisServer, startOwnRedisServer } from '../helpers/redis-server.js';
import { testServices, uniqueName } from '../helpers/services.js';
import {
  createUsageItems,
  eventually,
  INGEST_LISTENING,
  serviceProcesses,
  type UsageItems,
} from '../usage/support.js';
import {
  assertClientBuilt,
  type Exchange,
  expectExactlyOnce,
  expectRetryAfterHonoured,
  recordingFetch,
  reportStream,
  TEST_REPORTER_SETTINGS,
} from './support.js';

const API_LISTENING = /listening at http:\/\/127\.0\.0\.1:(\d+)/;
const SINKS_RUNNING = /sinks running \(pg-sink, ch-sink, alerts\)/;

/**
 * The client's UsageReporter against the distributed service, every part its own process as
 * deployed: the api and ingest services and the sinks, on Postgres, a Redis server and a Kafka
 * test broker of this file's own (to freeze and take down) and ClickHouse. Under each fault, in
 * the middle of a stream of events, every event reported is stored exactly once in Postgres or
 * handed to onRejected, and close() returns nothing unsent.
 */
describe('UsageReporter against the distributed service', { timeout: 180_000 }, () => {
  const processes = serviceProcesses('client_reporter');
  let redis: OwnRedisServer;
  let broker: KafkaTestBroker;
  let clickhouse: ClickHouse;
  let env: Record<string, string | undefined>;
  let ingest: ServiceProcess;
  let api: ServiceProcess;
  let ingestUrl: string;
  let apiUrl: string;
  let org: TestOrg;
  let items: UsageItems;

  const startIngest = () => processes.start('services/ingest/main.ts', env, INGEST_LISTENING);
  const startApi = () =>
    processes.start('services/api/main.ts', { ...env, LOG_LEVEL: 'info' }, API_LISTENING);

  beforeAll(async () => {
    await assertClientBuilt();
    [redis, broker] = await Promise.all([startOwnRedisServer(), startKafkaTestBroker()]);
    const topic = uniqueName('client_usage');
    await broker.createTopic(topic, 4);
    clickhouse = openClickHouse({ url: testServices().clickhouseUrl, database: uniqueName('client_usage') });
    await migrateClickHouse(clickhouse);
    const [ingestPort, apiPort] = [freePort(), freePort()];
    env = processes.env({
      PORT: String(apiPort),
      INGEST_PORT: String(ingestPort),
      SINKS_PORT: '0',
      REDIS_URL: redis.url,
      KAFKA_BROKERS: broker.brokers.join(','),
      KAFKA_USAGE_TOPIC: topic,
      KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-`,
      CLICKHOUSE_URL: testServices().clickhouseUrl,
      CLICKHOUSE_DATABASE: clickhouse.database,
      // an outage is noticed within these, so a fault costs the test seconds, not minutes
      REDIS_COMMAND_TIMEOUT_MS: '1000',
      KAFKA_ACK_TIMEOUT_MS: '1500',
      SINK_FLUSH_MS: '50',
      SHUTDOWN_TIMEOUT_MS: '10000',
    });
    org = await createTestOrg(processes.database.db);
    items = await createUsageItems(processes.database.db, org.orgId);
    [ingest, api] = await Promise.all([startIngest(), startApi()]);
    await processes.start('services/ingest/sinks.ts', env, SINKS_RUNNING);
    ingestUrl = `http://127.0.0.1:${ingestPort}/api/public/v1`;
    apiUrl = `http://127.0.0.1:${apiPort}/api/public/v1`;
  });
  afterAll(async () => {
    redis?.resume();
    await broker?.setUp().catch(() => {});
    await clickhouse?.close();
    await broker?.stop();
    await redis?.stop();
  });

  function reporterFor(baseUrl: string) {
    const rejections: UsageRejection[] = [];
    const exchanges: Exchange[] = [];
    const reporter = new UsageReporter({
      baseUrl,
      apiKey: org.apiKey,
      ...TEST_REPORTER_SETTINGS,
      onRejected: (rejection) => rejections.push(rejection),
      fetch: recordingFetch(exchanges),
    });
    return { reporter, rejections, exchanges };
  }

  const stream = (reporter: UsageReporter, label: string, fault?: () => Promise<void>) =>
    reportStream(reporter, {
      label: uniqueName(label),
      metered: items.metered,
      refusedItem: items.licensed,
      total: 4000,
      fault,
    });

  it('counts every event once through kill -9 of the ingest process and its restart', async () => {
    const { reporter, rejections, exchanges } = reporterFor(ingestUrl);
    const reported = await stream(reporter, 'kill9', async () => {
      await ingest.kill();
      await sleep(1000);
      ingest = await startIngest();
    });
    const { unsent } = await reporter.close({ timeoutMs: 60_000 });
    expect(unsent).toEqual([]);
    // the kill reached the reporter: requests got no answer, and were sent again
    expect(exchanges.some((e) => e.status === 0)).toBe(true);
    expect(reporter.stats.retried).toBeGreaterThan(0);
    await expectExactlyOnce(processes.database.db, org.orgId, items.metered, reported, rejections);
  });

  it('counts every event once when answers are lost after the service recorded the events', async () => {
    const rejections: UsageRejection[] = [];
    let requests = 0;
    let lost = 0;
    const reporter = new UsageReporter({
      baseUrl: ingestUrl,
      apiKey: org.apiKey,
      ...TEST_REPORTER_SETTINGS,
      maxBatchEvents: 250,
      onRejected: (rejection) => rejections.push(rejection),
      // every third request reaches the service and is recorded, but its answer never arrives
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        const body = await response.text();
        if (++requests % 3 === 0) {
          lost++;
          throw new TypeError('fetch failed: connection reset');
        }
        return new Response(body, { status: response.status, headers: response.headers });
      },
    });
    const reported = await stream(reporter, 'lost_answers');
    const { unsent } = await reporter.close({ timeoutMs: 60_000 });
    expect(unsent).toEqual([]);
    expect(lost).toBeGreaterThan(5);
    await expectExactlyOnce(processes.database.db, org.orgId, items.metered, reported, rejections);
  });

  it('counts every event once while Redis is frozen (SIGSTOP) and after it thaws', async () => {
    const { reporter, rejections, exchanges } = reporterFor(ingestUrl);
    const reported = await stream(reporter, 'redis_frozen', async () => {
      redis.pause();
      await sleep(4000);
      redis.resume();
    });
    const { unsent } = await reporter.close({ timeoutMs: 60_000 });
    expect(unsent).toEqual([]);
    expect(exchanges.filter((e) => e.status === 503).length).toBeGreaterThan(0);
    expectRetryAfterHonoured(exchanges);
    await expectExactlyOnce(processes.database.db, org.orgId, items.metered, reported, rejections);
  });

  it('waits out a storm of 503s (Kafka down), as Retry-After asks, then counts every event once', async () => {
    const { reporter, rejections, exchanges } = reporterFor(ingestUrl);
    const reported = await stream(reporter, 'storm', async () => {
      await broker.setDown();
      await sleep(6000);
      await broker.setUp();
    });
    const { unsent } = await reporter.close({ timeoutMs: 60_000 });
    expect(unsent).toEqual([]);
    const refused = exchanges.filter((e) => e.status === 503);
    expect(refused.length).toBeGreaterThan(1);
    expectRetryAfterHonoured(exchanges);
    // backing off, the reporter asked a handful of times in 6 s rather than hammering
    expect(refused.length).toBeLessThan(20);
    await expectExactlyOnce(processes.database.db, org.orgId, items.metered, reported, rejections);
  });

  it('counts every event once when the api it reports to is restarted (SIGTERM, then started again)', async () => {
    const { reporter, rejections, exchanges } = reporterFor(apiUrl);
    const reported = await stream(reporter, 'api_restart', async () => {
      expect(await api.stop()).toBe(0);
      api = await startApi();
    });
    const { unsent } = await reporter.close({ timeoutMs: 60_000 });
    expect(unsent).toEqual([]);
    expect(exchanges.some((e) => e.status === 0 || e.status === 503)).toBe(true);
    await expectExactlyOnce(processes.database.db, org.orgId, items.metered, reported, rejections);
  });

  it('loses nothing when closed under load: close() sends every event still buffered', async () => {
    const { reporter, rejections } = reporterFor(ingestUrl);
    // reported as fast as the buffer takes them, then closed at once: most are still buffered
    const reported = await reportStream(reporter, {
      label: uniqueName('close'),
      metered: items.metered,
      refusedItem: items.licensed,
      total: 10_000,
      perTick: 10_000,
    });
    expect(reporter.stats.buffered).toBeGreaterThan(1000);
    const { unsent } = await reporter.close({ timeoutMs: 60_000 });
    expect(unsent).toEqual([]);
    expect(reporter.stats).toMatchObject({ buffered: 0, sent: 9500, rejected: 500 });
    await expectExactlyOnce(processes.database.db, org.orgId, items.metered, reported, rejections);
    // and ClickHouse, fed by its own sink, counts them once too
    const prefix = reported.keys[0]!.replace(/-\d+$/, '');
    await eventually(async () => {
      const [row] = await clickhouse.rows<{ n: string }>(
        `SELECT count() AS n FROM ${clickhouse.database}.usage_events FINAL
          WHERE subscription_item_id = ${items.metered} AND idempotency_key LIKE '${prefix}-%'`,
      );
      expect(Number(row!.n)).toBe(reported.keys.length);
    }, 60_000);
  });
});
