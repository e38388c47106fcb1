import { describe, expect, it } from 'vitest';
import { createAlert } from '../../libs/guardrails/index.js';
import { createKafka } from '../../libs/kafka/index.js';
import { encodeLogMessages } from '../../libs/usage/index.js';
import { outbox } from '../billing/fixtures.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { readStoresOver } from '../helpers/read-stores.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { eventually, meteredSubscriptionThisMonth, serviceProcesses, usageEventRecord } from './support.js';

const RUNNING = /sinks running \(pg-sink, alerts\); ops on port (\d+)/;

/**
 * Alerts in the distributed mode: the guardrails consumer group runs in the sinks process, which is
 * killed without warning (SIGKILL) right after the pg-sink counted a crossing, then started again:
 * Kafka delivers the uncommitted batch again, the evaluation runs again, and alert.triggered is
 * still emitted once. Two sinks processes at once split the work and fire it once too.
 */
describe('guardrails in the sinks process', () => {
  const processes = serviceProcesses('guardrails_process');

  /** usage_quantity: the `alerts` group's; usage_amount: the `guardrails` group's (after the watermark). */
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
    const stores = readStoresOver(db);
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
      const events = quantities.map((quantity) => usageEventRecord(org.orgId, item, String(quantity)));
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
    return { env, produce, counted, state, triggered, close: () => producer.disconnect() };
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

  it('two sinks processes at once split the work and fire one crossing once', {
    timeout: 90_000,
  }, async () => {
    const { env, produce, state, triggered, close } = await setUp();
    try {
      const [one, two] = await Promise.all([
        processes.start('services/ingest/sinks.ts', env, RUNNING),
        processes.start('services/ingest/sinks.ts', env, RUNNING),
      ]);
      // both members hold some partitions and have loaded the alert (reading 0, as_of past the
      // settle time: a bound can rest on it)
      // (the second member's join makes the first rejoin at its next heartbeat; the test broker
      // answers no DescribeGroups to ask it)
      await new Promise((resolve) => setTimeout(resolve, 12_000));
      // the unkeyed log spreads the item's usage over both members: each reads about half, and
      // the reading plus a half stays below the threshold; a member that holds only some
      // partitions draws no bound and reads, well before the alert's 30 s read
      for (let n = 0; n < 12; n++) await produce([10]);
      // the reading that fires is the first at or past 100: it may come before the last events.
      // (Within about a second on a quiet machine; under the full suite's load the group's
      // rebalance can take longer, so the deadline allows the alert's 30 s read too: the
      // runner's side is held by sinks.test's "tells its sink whether this member reads".)
      await eventually(async () => {
        const { status, value } = await state();
        expect(status).toBe('TRIGGERED');
        expect(['100.00000000', '110.00000000', '120.00000000']).toContain(value);
      }, 40_000);
      expect(await triggered()).toBe(1);
      await Promise.all([one.stop(), two.stop()]);
    } finally {
      await close();
    }
  });

  it('SINKS_GUARDRAILS=false counts usage and evaluates nothing; the group resumes in the next process', {
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
