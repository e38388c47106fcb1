import { beforeAll, describe, expect, it } from 'vitest';
import { startUsageSinks, type UsageSinks } from '../../libs/usage/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';
import {
  createUsageItems,
  eventually,
  INGEST_LISTENING,
  serviceProcesses,
  type UsageItems,
} from './support.js';

/**
 * Issue 8: the ingest service as the real process `npm run start:ingest` starts, stopped with
 * SIGTERM while clients send events. Every request answered 201 must reach Postgres.
 */
describe('ingest service process', () => {
  const processes = serviceProcesses('ingest_process');
  let org: TestOrg;
  let items: UsageItems;

  beforeAll(async () => {
    org = await createTestOrg(processes.database.db);
    items = await createUsageItems(processes.database.db, org.orgId);
  });

  it.each(['true', 'false'])(
    'loses no accepted event when SIGTERM arrives under load (INGEST_TRUSTED_PROXY=%s)',
    async (trustedProxy) => {
      const topic = uniqueName('usage_sigterm');
      const env = processes.env({
        INGEST_PORT: '0',
        INGEST_TRUSTED_PROXY: trustedProxy,
        REDIS_URL: testServices().redisUrl,
        REDIS_KEY_PREFIX: `${uniqueName('sigterm')}:`,
        KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
        KAFKA_USAGE_TOPIC: topic,
        SHUTDOWN_TIMEOUT_MS: '10000',
        LOG_LEVEL: 'info',
      });
      const ingest = await processes.start('services/ingest/main.ts', env, INGEST_LISTENING);
      const url = `http://127.0.0.1:${ingest.match[1]}/api/public/v1/usage/events`;
      let sinks: UsageSinks | undefined;
      try {
        sinks = await startUsageSinks({
          config: {
            KAFKA_BROKERS: testServices().kafkaBrokers,
            KAFKA_CLIENT_ID: 'sigterm-test',
            KAFKA_USAGE_TOPIC: topic,
            KAFKA_TOPIC_PARTITIONS: 4,
            CLICKHOUSE_URL: undefined,
            CLICKHOUSE_DATABASE: 'unused',
            SINK_BATCH_SIZE: 500,
            SINK_FLUSH_MS: 50,
            KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-`,
          },
          db: processes.database.db,
          log: runLogger('sinks'),
        });

        const accepted: string[] = [];
        const other: string[] = [];
        let stopAt = Number.POSITIVE_INFINITY;
        let sequence = 0;
        const worker = async () => {
          while (Date.now() < stopAt) {
            const key = `sigterm-${trustedProxy}-${++sequence}`;
            try {
              const response = await fetch(url, {
                method: 'POST',
                headers: {
                  authorization: `Bearer ${org.apiKey}`,
                  'content-type': 'application/json',
                  'idempotency-key': key,
                },
                body: JSON.stringify({ subscription_item_id: items.metered, quantity: 1 }),
              });
              const body = (await response.json()) as { data: { id: string } };
              if (response.status === 201) accepted.push(body.data.id);
              else other.push(String(response.status));
            } catch {
              // The server closed the connection or stopped listening: shutdown reached this client.
              other.push('connection');
              await new Promise((resolve) => setTimeout(resolve, 20));
            }
          }
        };
        const workers = Array.from({ length: 30 }, worker);
        await eventually(async () => expect(accepted.length).toBeGreaterThan(200));
        const signalled = Date.now();
        const exitCode = await ingest.stop();
        const shutdownMs = Date.now() - signalled;
        stopAt = Date.now() + 300;
        await Promise.all(workers);

        expect(exitCode).toBe(0);
        expect(shutdownMs).toBeLessThan(10_000);
        // an operator reading the log sees the signal and the end of the drain
        expect(ingest.output()).toMatch(/"signal":"SIGTERM".*"msg":"shutting down"/);
        expect(ingest.output()).toMatch(/"signal":"SIGTERM","ms":\d+.*"msg":"shut down"/);
        expect(other.length).toBeGreaterThan(0);
        await eventually(async () => {
          const { rows } = await processes.database.db.query<{ id: string }>(
            'SELECT id FROM usage_events WHERE id = ANY($1::uuid[])',
            [accepted],
          );
          expect(rows.length).toBe(accepted.length);
        }, 30_000);
      } finally {
        await ingest.stop();
        await sinks?.stop();
      }
    },
  );
});
