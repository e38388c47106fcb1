import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createAlert } from '../../libs/guardrails/index.js';
import { createKafka } from '../../libs/kafka/index.js';
import { createLogger } from '../../libs/log/index.js';
import {
  encodeLogMessages,
  InProcessUsageEventLog,
  openUsageReadStores,
  PostgresUsageSink,
  type UsageEventRecord,
} from '../../libs/usage/index.js';
import { outbox } from '../billing/fixtures.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { eventually, meteredSubscriptionThisMonth, serviceProcesses } from './support.js';

const RUNNING = /sinks running \(pg-sink\); alerts on pg-sink; ops on port (\d+)/;

/**
 * Alerts in the distributed mode: the pg-sink of the sinks process hands each batch it wrote to
 * the evaluators before it commits (docs/decisions.md, "Alerts ride the pg-sink"). The process is
 * killed without warning (SIGKILL) right after the pg-sink counted a crossing, then started again:
 * Kafka delivers the uncommitted batch again, the evaluation runs again, and alert.triggered is
 * still emitted once. Two sinks processes at once split the work and fire it once too.
 */
describe('guardrails in the sinks process', () => {
  const processes = serviceProcesses('guardrails_process');

  /** usage_quantity: QuantityAlerts'; usage_amount: the other policies' (queued, after the watermark). */
  async function setUp(metric: 'usage_quantity' | 'usage_amount' = 'usage_quantity') {
    const topic = uniqueName('usage_guardrails');
    const env = processes.env({
      SINKS_PORT: '0',
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_USAGE_TOPIC: topic,
      KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-`,
      SINK_BATCH_SIZE: '100',
      SINK_FLUSH_MS: '20',
    });
    const db = processes.database.db;
    const org = await createTestOrg(db);
    const { subscription } = await meteredSubscriptionThisMonth(db, org.orgId);
    const item = subscription.items[0]!.id;
    // made through the embedded read stores: nothing is counted yet, the alert starts OK
    const stores = openUsageReadStores(
      {
        CLICKHOUSE_URL: undefined,
        CLICKHOUSE_DATABASE: 'billing',
        KAFKA_BROKERS: undefined,
        KAFKA_CLIENT_ID: 'test',
        KAFKA_USAGE_TOPIC: topic,
        KAFKA_CONSUMER_GROUP_PREFIX: '',
      },
      db,
      new InProcessUsageEventLog(new PostgresUsageSink(db), [], { lingerMs: 0 }),
      createLogger({ level: 'silent', service: 'test' }),
    );
    const alert = await createAlert(
      db,
      stores,
      org.orgId,
      metric === 'usage_quantity'
        ? { subscription_id: subscription.id, metric, subscription_item_id: item, threshold: '100' }
        : { subscription_id: subscription.id, metric, threshold: '100' },
    );
    await stores.close();
    const producer = createKafka({
      brokers: testServices().kafkaBrokers,
      clientId: 'guardrails-test',
    }).producer();
    await producer.connect();
    const produce = async (quantities: number[]) => {
      const events: UsageEventRecord[] = quantities.map((quantity) => ({
        id: randomUUID(),
        orgId: org.orgId,
        subscriptionItemId: item,
        idempotencyKey: uniqueName('event'),
        quantity: String(quantity),
        occurredAtMs: Date.now(),
        recordedAtMs: Date.now(),
      }));
      await producer.send({ topic, acks: -1, messages: encodeLogMessages(events) });
    };
    const counted = async () => {
      const { rows } = await db.query<{ total: string | null }>(
        'SELECT sum(quantity)::text AS total FROM usage_events WHERE subscription_item_id = $1',
        [item],
      );
      return Number(rows[0]!.total ?? 0);
    };
    const state = async () => {
      const { rows } = await db.query<{ status: string; value: string | null }>(
        'SELECT status, value::text FROM alerts WHERE id = $1',
        [alert.id],
      );
      return rows[0]!;
    };
    const triggered = async () =>
      (await outbox(db, org.orgId, 'alert.triggered')).filter((event) => event.data.id === alert.id).length;
    const admin = createKafka({ brokers: testServices().kafkaBrokers, clientId: 'guardrails-test' }).admin();
    await admin.connect();
    /** Per group, its committed offsets summed over the topic's partitions, and the log's end. */
    const offsets = async (group: string) => {
      const [committed] = await admin.fetchOffsets({ groupId: `${topic}-${group}`, topics: [topic] });
      const ends = await admin.fetchTopicOffsets(topic);
      return {
        committed: committed!.partitions.reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0),
        end: ends.reduce((sum, p) => sum + Number(p.high), 0),
      };
    };
    return {
      env,
      db,
      alert,
      produce,
      counted,
      state,
      triggered,
      offsets,
      close: async () => {
        await producer.disconnect();
        await admin.disconnect();
      },
    };
  }

  it('fires once when killed right after the pg-sink counted the crossing, and again after each restart', {
    timeout: 120_000,
  }, async () => {
    const { env, produce, counted, state, triggered, close } = await setUp();
    try {
      await produce([60, 40]); // 100: the threshold
      for (let round = 0; round < 2; round++) {
        const sinks = await processes.start('services/ingest/sinks.ts', env, RUNNING);
        await eventually(
          async () => expect(await counted()).toBeGreaterThanOrEqual(100 + round * 10),
          30_000,
        );
        // the crossing is counted: the guardrails may or may not have run (and committed) yet
        await sinks.kill();
        await produce([10]); // more usage above the threshold for the next round
      }
      const last = await processes.start('services/ingest/sinks.ts', env, RUNNING);
      await eventually(
        async () => expect(await state()).toEqual({ status: 'TRIGGERED', value: '120.00000000' }),
        40_000,
      );
      expect(await counted()).toBe(120); // 100, then 10 after each of the two kills: each once
      expect(await triggered()).toBe(1);
      await last.stop();
    } finally {
      await close();
    }
  });

  it('the other policies: an amount alert fires once when killed right after the crossing was counted', {
    timeout: 120_000,
  }, async () => {
    const { env, produce, counted, state, triggered, close } = await setUp('usage_amount');
    try {
      await produce([60, 40]); // 100.00 at 1.00 a call: the threshold
      const sinks = await processes.start('services/ingest/sinks.ts', env, RUNNING);
      await eventually(async () => expect(await counted()).toBe(100), 30_000);
      // the group may or may not have evaluated (and committed) yet; a new process loads the
      // watched items and evaluates them all first
      await sinks.kill();
      const last = await processes.start('services/ingest/sinks.ts', env, RUNNING);
      await eventually(async () => expect((await state()).status).toBe('TRIGGERED'), 40_000);
      await produce([10]);
      await eventually(async () => expect(await counted()).toBe(110), 30_000);
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect(await triggered()).toBe(1);
      await last.stop();
    } finally {
      await close();
    }
  });

  it('fires through the pg-sink: no `alerts` consumer group, within a second or two of the write', {
    timeout: 90_000,
  }, async () => {
    const { env, produce, counted, state, triggered, offsets, close } = await setUp();
    try {
      const sinks = await processes.start('services/ingest/sinks.ts', env, RUNNING);
      await produce([10]);
      await eventually(async () => expect(await counted()).toBe(10), 30_000);
      // past the evaluator's first load (every OK alert read at a process's start, reload 2 s): from
      // here only the pg-sink's hand-off reads the alert again (its next refresh is 30 s away)
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect((await state()).status).toBe('OK');
      await produce([90]);
      const crossed = Date.now();
      await eventually(async () => expect((await state()).status).toBe('TRIGGERED'), 5000);
      expect(Date.now() - crossed).toBeLessThan(2000); // SINK_FLUSH_MS 20 here, no watermark wait
      expect(await triggered()).toBe(1);
      expect((await offsets('alerts')).committed).toBe(0); // no group of its own reads the log
      await eventually(async () => {
        const { committed, end } = await offsets('pg-sink');
        expect(committed).toBe(end);
      });
      await sinks.stop();
    } finally {
      await close();
    }
  });

  it('commits a batch only once its quantity alerts were read: a kill before that reads it again', {
    timeout: 120_000,
  }, async () => {
    const { env, db, alert, produce, counted, state, triggered, offsets, close } = await setUp();
    try {
      const sinks = await processes.start('services/ingest/sinks.ts', env, RUNNING);
      await new Promise((resolve) => setTimeout(resolve, 3000)); // the first load read the alert
      // the alert's row held: the reading that moves it waits, between the write and the commit
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let held!: () => void;
      const holding = new Promise<void>((resolve) => {
        held = resolve;
      });
      const holder = db.transaction(async (tx) => {
        await tx.query('SELECT 1 FROM alerts WHERE id = $1 FOR UPDATE', [alert.id]);
        held();
        await released;
      });
      await holding;
      try {
        await produce([100]);
        await eventually(async () => expect(await counted()).toBe(100), 30_000);
        await new Promise((resolve) => setTimeout(resolve, 1500));
        // written, not committed: the batch's evaluation has not finished
        const { committed, end } = await offsets('pg-sink');
        expect(end).toBeGreaterThan(0);
        expect(committed).toBeLessThan(end);
        await sinks.kill();
      } finally {
        release();
        await holder;
      }
      expect(await state()).toEqual({ status: 'OK', value: '0.00000000' });
      const again = await processes.start('services/ingest/sinks.ts', env, RUNNING);
      await eventually(
        async () => expect(await state()).toEqual({ status: 'TRIGGERED', value: '100.00000000' }),
        40_000,
      );
      await eventually(async () => {
        const { committed, end } = await offsets('pg-sink');
        expect(committed).toBe(end);
      }, 30_000);
      expect(await counted()).toBe(100);
      expect(await triggered()).toBe(1);
      await again.stop();
    } finally {
      await close();
    }
  });

  it('two sinks processes at once split the work and fire one crossing once', {
    timeout: 90_000,
  }, async () => {
    const { env, produce, state, triggered, close } = await setUp();
    try {
      const [one, two] = await Promise.all([
        processes.start('services/ingest/sinks.ts', env, RUNNING),
        processes.start('services/ingest/sinks.ts', env, RUNNING),
      ]);
      // both in the group, past their first load (which reads every OK alert, as_of near their
      // start: no bound can rest on it); the next usage is read, as_of past the settle time
      await new Promise((resolve) => setTimeout(resolve, 4000));
      await produce([10]);
      await eventually(async () => expect((await state()).value).toBe('10.00000000'), 10_000);
      // both reloaded that reading: from here each is handed about half of the item's usage, and
      // the reading plus either half stays below the threshold
      await new Promise((resolve) => setTimeout(resolve, 3000));
      for (let n = 0; n < 11; n++) await produce([10]);
      // well before the 30 s refresh: a member holding some partitions draws no bound, it reads
      await eventually(async () => expect((await state()).status).toBe('TRIGGERED'), 10_000);
      await new Promise((resolve) => setTimeout(resolve, 2000)); // both members done reading
      expect(await triggered()).toBe(1);
      await Promise.all([one.stop(), two.stop()]);
    } finally {
      await close();
    }
  });

  it('SINKS_GUARDRAILS=false counts usage and evaluates nothing; a process that evaluates reads it at its start', {
    timeout: 90_000,
  }, async () => {
    const { env, produce, counted, state, triggered, close } = await setUp();
    try {
      const storesOnly = await processes.start(
        'services/ingest/sinks.ts',
        { ...env, SINKS_GUARDRAILS: 'false' },
        /sinks running \(pg-sink\); ops on port (\d+)/,
      );
      await produce([150]);
      await eventually(async () => expect(await counted()).toBe(150), 30_000);
      // the pg-sink's watermark moved past the crossing: an evaluator would have run by now
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(await state()).toEqual({ status: 'OK', value: '0.00000000' });
      await storesOnly.stop();
      const full = await processes.start('services/ingest/sinks.ts', env, RUNNING);
      await eventually(
        async () => expect(await state()).toEqual({ status: 'TRIGGERED', value: '150.00000000' }),
        40_000,
      );
      expect(await triggered()).toBe(1);
      await full.stop();
    } finally {
      await close();
    }
  });
});
