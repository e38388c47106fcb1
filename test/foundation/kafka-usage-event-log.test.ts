import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DirectProducer } from '../../libs/kafka/direct-producer.js';
import { type Admin, createKafka, partitionOfKey } from '../../libs/kafka/index.js';
import { createLogger } from '../../libs/log/index.js';
import { kafkaProduceCalls } from '../../libs/observability/index.js';
import { logMessageKey, type UsageEventRecord } from '../../libs/usage/domain/event.js';
import { KafkaUsageEventLog } from '../../libs/usage/event-log/kafka.js';
import { type KafkaTestBroker, startKafkaTestBroker } from '../helpers/kafka-test-broker.js';

/** The usage log on Kafka, against a test broker of its own (taken down in one test). */
describe('KafkaUsageEventLog', () => {
  let broker: KafkaTestBroker;
  let admin: Admin;
  beforeAll(async () => {
    broker = await startKafkaTestBroker();
    admin = createKafka({ brokers: broker.brokers, clientId: 'usage-log-test' }).admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.disconnect();
    await broker?.stop();
  });

  function logOf(topic: string, lingerMs = 5) {
    return new KafkaUsageEventLog(createKafka({ brokers: broker.brokers, clientId: 'usage-log-test' }), {
      topic,
      lingerMs,
      ackTimeoutMs: 5000,
      log: createLogger({ level: 'silent', service: 'test' }),
    });
  }

  const event = (orgId: number, subscriptionItemId: number): UsageEventRecord => ({
    id: randomUUID(),
    orgId,
    subscriptionItemId,
    idempotencyKey: `key-${orgId}-${subscriptionItemId}`,
    quantity: '1',
    occurredAtMs: 1_700_000_000_000,
    recordedAtMs: 1_700_000_000_001,
  });

  /** High watermark of each partition of `topic`, in partition order. */
  const highWatermarks = async (topic: string) =>
    (await admin.fetchTopicOffsets(topic))
      .sort((a, b) => a.partition - b.partition)
      .map((partition) => Number(partition.high));

  const leaderCalls = kafkaProduceCalls.labels('leader');

  it('writes its first append straight to a leader once connected', async () => {
    await broker.createTopic('usage-log-connected', 2);
    const log = logOf('usage-log-connected');
    try {
      await log.connect();
      const before = leaderCalls.value;
      await log.append([event(1, 1)]);
      expect(leaderCalls.value).toBe(before + 1);
    } finally {
      await log.close();
    }
  });

  it("writes each void to the partition of its event's key, straight to its leader once routed", async () => {
    const topic = 'usage-log-voids';
    await broker.createTopic(topic, 6);
    const log = logOf(topic);
    const voidOf = (e: UsageEventRecord) => ({ event: e, voidedAtMs: 1_700_000_000_500 });
    const partitionOf = (e: UsageEventRecord) =>
      partitionOfKey(topic, logMessageKey(e.orgId, e.subscriptionItemId), 6);
    try {
      await log.connect();
      const expected = [0, 0, 0, 0, 0, 0];
      // the first call of the voids' own producer reads its route (it goes through kafkajs meanwhile)
      const voided = [event(3, 7), event(4, 11), event(5, 2)];
      await log.appendVoids(voided.map(voidOf));
      for (const e of voided) expected[partitionOf(e)]!++;
      await vi.waitFor(async () => {
        const before = leaderCalls.value;
        const again = event(3, 7);
        await log.appendVoids([voidOf(again)]);
        expected[partitionOf(again)]!++;
        expect(leaderCalls.value).toBe(before + 1);
      });
      expect(await highWatermarks(topic)).toEqual(expected);
    } finally {
      await log.close();
    }
  });

  it('appends no voids without asking Kafka, even while it is down', async () => {
    await broker.createTopic('usage-log-no-voids', 1);
    const log = logOf('usage-log-no-voids');
    try {
      await log.connect();
      await broker.setDown();
      await expect(log.appendVoids([])).resolves.toBeUndefined();
    } finally {
      await broker.setUp();
      await log.close();
    }
    expect(await highWatermarks('usage-log-no-voids')).toEqual([0]);
  });

  it('sends a void at once while two produce calls are in flight: voids never linger', async () => {
    const topic = 'usage-log-void-linger';
    await broker.createTopic(topic, 1);
    const log = logOf(topic, 5000);
    const voidOf = (e: UsageEventRecord) => ({ event: e, voidedAtMs: 1_700_000_000_500 });
    const produceCalls = vi.spyOn(DirectProducer.prototype, 'send');
    try {
      await log.connect();
      await log.appendVoids([voidOf(event(1, 1))]); // connects the voids' producer
      produceCalls.mockClear();
      await broker.pause(); // produce calls stay in flight
      const calls = [log.appendVoids([voidOf(event(1, 2))])];
      await vi.waitFor(() => expect(produceCalls).toHaveBeenCalledTimes(1));
      calls.push(log.appendVoids([voidOf(event(1, 3))]));
      await vi.waitFor(() => expect(produceCalls).toHaveBeenCalledTimes(2));
      calls.push(log.appendVoids([voidOf(event(1, 4))]));
      // well before the 5 s linger of the events
      await vi.waitFor(() => expect(produceCalls).toHaveBeenCalledTimes(3), { timeout: 1000 });
      broker.resume();
      await Promise.all(calls);
      expect(await highWatermarks(topic)).toEqual([4]);
    } finally {
      broker.resume();
      produceCalls.mockRestore();
      await log.close();
    }
  });

  it('closes the producer of voids too: a void appended after close is not written', async () => {
    const topic = 'usage-log-void-closed';
    await broker.createTopic(topic, 1);
    const log = logOf(topic);
    await log.connect();
    await log.appendVoids([{ event: event(2, 1), voidedAtMs: 1_700_000_000_500 }]);
    await log.close();
    await expect(log.appendVoids([{ event: event(2, 2), voidedAtMs: 1_700_000_000_500 }])).rejects.toThrow();
    expect(await highWatermarks(topic)).toEqual([1]);
  });
});
