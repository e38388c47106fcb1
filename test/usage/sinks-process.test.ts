import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClickHouse, openClickHouse } from '../../libs/clickhouse/index.js';
import { createKafka } from '../../libs/kafka/index.js';
import { encodeLogMessages, migrateClickHouse } from '../../libs/usage/index.js';
import { runTs } from '../helpers/processes.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { eventually, serviceProcesses } from './support.js';

const EVENTS = 20_000;
const RUNNING = /sinks running \(pg-sink, ch-sink, alerts\); ops on port (\d+)/;

/**
 * The sinks as the real process `npm run start:sinks` starts, killed without warning while it
 * works through a backlog and started again: nothing is lost (offsets were committed only after
 * writes) and nothing is doubled (the redelivered part lands on the idempotent sinks).
 */
describe('sinks process', () => {
  const processes = serviceProcesses('sinks_process');
  let clickhouse: ClickHouse;
  let topic: string;
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    topic = uniqueName('usage_sinks_process');
    clickhouse = openClickHouse({ url: testServices().clickhouseUrl, database: uniqueName('sinks_process') });
    env = processes.env({
      SINKS_PORT: '0',
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_USAGE_TOPIC: topic,
      KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-`,
      CLICKHOUSE_URL: testServices().clickhouseUrl,
      CLICKHOUSE_DATABASE: clickhouse.database,
      SINK_BATCH_SIZE: '1000',
      SINK_FLUSH_MS: '50',
    });
  });
  afterAll(async () => {
    await clickhouse?.close();
  });

  it('creates the ClickHouse schema from the console (`clickhouse migrate`)', async () => {
    const result = await runTs('bin/console.ts', ['clickhouse', 'migrate'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ database: clickhouse.database, tables: ['usage_events'] });
    const tables = await clickhouse.rows<{ name: string }>(`SHOW TABLES FROM ${clickhouse.database}`);
    expect(tables).toEqual([{ name: 'usage_events' }]);
    // Every deploy runs it again: nothing changes.
    await expect(migrateClickHouse(clickhouse)).resolves.toEqual({
      database: clickhouse.database,
      tables: ['usage_events'],
    });
  });

  // The restarted process joins the groups once the killed member's session (10 s) expired.
  it('loses and doubles nothing when killed mid-stream and restarted', { timeout: 60_000 }, async () => {
    const kafka = createKafka({ brokers: testServices().kafkaBrokers, clientId: 'sinks-process-test' });
    const producer = kafka.producer();
    await producer.connect();
    let expectedUnits = 0n;
    for (let sent = 0; sent < EVENTS; sent += 5000) {
      const events = Array.from({ length: 5000 }, (_, i) => {
        const n = sent + i;
        expectedUnits += BigInt((n % 7) + 1);
        return {
          id: randomUUID(),
          orgId: 1,
          subscriptionItemId: 100 + (n % 5),
          idempotencyKey: `process-${n}`,
          quantity: `${(n % 7) + 1}`,
          occurredAtMs: Date.UTC(2026, 9, 1) + n,
          recordedAtMs: Date.now(),
        };
      });
      // Messages of 100 events: the sinks commit and resume between messages, as in production.
      const messages = [];
      for (let at = 0; at < events.length; at += 100)
        messages.push(...encodeLogMessages(events.slice(at, at + 100)));
      await producer.send({ topic, acks: -1, messages });
    }
    await producer.disconnect();
    const count = async () => {
      const { rows } = await processes.database.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM usage_events',
      );
      return rows[0]!.n;
    };

    const first = await processes.start('services/ingest/sinks.ts', env, RUNNING);
    await eventually(async () => expect(await count()).toBeGreaterThan(0), 30_000);
    await first.kill();
    const killedAt = await count();
    expect(killedAt).toBeLessThan(EVENTS);

    const second = await processes.start('services/ingest/sinks.ts', env, RUNNING);
    try {
      await eventually(async () => expect(await count()).toBe(EVENTS), 60_000);
      await eventually(async () => {
        const rows = await clickhouse.rows<{ n: string; total: string }>(
          `SELECT count() AS n, toString(sum(quantity)) AS total FROM ${clickhouse.database}.usage_events FINAL`,
        );
        expect(rows).toEqual([{ n: String(EVENTS), total: `${expectedUnits}.00000000` }]);
      }, 60_000);
      const { rows } = await processes.database.db.query<{ total: string }>(
        'SELECT sum(quantity)::text AS total FROM usage_events',
      );
      expect(rows[0]!.total).toBe(`${expectedUnits}.00000000`);

      // Operations routes of the sinks process (issue 8).
      const ops = `http://127.0.0.1:${second.match[1]}`;
      expect((await fetch(`${ops}/healthz`)).status).toBe(200);
      const ready = await fetch(`${ops}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({
        status: 'ready',
        checks: { database: { status: 'ok' }, kafka: { status: 'ok' }, clickhouse: { status: 'ok' } },
      });
      // The Postgres sink was mid-stream when killed, so this process wrote the rest of its events.
      await eventually(async () => {
        const metrics = await (await fetch(`${ops}/metrics`)).text();
        expect(metrics).toMatch(/billing_sink_events_written_total\{sink="pg-sink"\} [1-9]/);
        expect(metrics).toMatch(/billing_sink_write_duration_seconds_count\{sink="pg-sink"\} [1-9]/);
        expect(metrics).toContain('billing_sink_lag_messages{sink="pg-sink"} 0');
        expect(metrics).toMatch(/billing_sink_lag_seconds\{sink="pg-sink"\} \d/);
      });
    } finally {
      const code = await second.stop();
      expect(code, second.output()).toBe(0);
    }
  });
});
