import { Readable } from 'node:stream';
import { createClient } from '@clickhouse/client';
import { Kafka, logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { startKafkaTestBroker } from '../helpers/kafka-test-broker.js';
import { testServices, uniqueName } from '../helpers/services.js';

/** The real services the suite relies on answer as the code expects them to. */
describe('test services', () => {
  it('kafkajs produces to and consumes from the Kafka test broker with a consumer group', async () => {
    const kafka = new Kafka({
      brokers: testServices().kafkaBrokers,
      logLevel: logLevel.NOTHING,
      clientId: 'probe',
    });
    const topic = uniqueName('probe');
    const producer = kafka.producer({ allowAutoTopicCreation: true });
    await producer.connect();
    const messages = Array.from({ length: 500 }, (_, i) => ({
      key: `k${i % 7}`,
      value: JSON.stringify({ i }),
    }));
    await producer.send({ topic, acks: -1, messages });
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: uniqueName('group') });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen = new Set<number>();
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.add(JSON.parse(String(message.value)).i);
          if (seen.size === messages.length) resolve();
        },
      });
    });
    await consumer.disconnect();
    expect(seen.size).toBe(500);
  });

  it('a broker of its own can be taken down and brought back with its data', async () => {
    const broker = await startKafkaTestBroker();
    try {
      await broker.createTopic('t', 2);
      const kafka = new Kafka({ brokers: broker.brokers, logLevel: logLevel.NOTHING, retry: { retries: 0 } });
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: 't', acks: -1, messages: [{ value: 'before' }] });
      await broker.setDown();
      await expect(
        producer.send({ topic: 't', acks: -1, timeout: 1000, messages: [{ value: 'down' }] }),
      ).rejects.toThrow();
      await broker.setUp();
      await producer.disconnect();
      const admin = kafka.admin();
      await admin.connect();
      const offsets = await admin.fetchTopicOffsets('t');
      await admin.disconnect();
      expect(offsets.reduce((sum, p) => sum + Number(p.high), 0)).toBeGreaterThanOrEqual(1);
    } finally {
      await broker.stop();
    }
  });

  it('ClickHouse answers over HTTP with the official client (Decimal, ReplacingMergeTree, FINAL)', async () => {
    const database = uniqueName('ch');
    const client = createClient({ url: testServices().clickhouseUrl });
    try {
      await client.command({ query: `CREATE DATABASE ${database}` });
      await client.command({
        query: `CREATE TABLE ${database}.t (k String, q Decimal(38, 8), v UInt64) ENGINE = ReplacingMergeTree(v) ORDER BY k`,
      });
      // ClickHouse 18.16 reads decimals exactly from text but not from quoted JSON strings, so
      // exact decimals travel as TabSeparated text.
      await client.insert({
        table: `${database}.t`,
        values: Readable.from(['a\t1.5\t1\n', 'a\t1.5\t1\n', 'b\t0.00000001\t1\n'], { objectMode: false }),
        format: 'TabSeparated',
      });
      const result = await client.query({
        query: `SELECT toString(sum(q)) AS s, count() AS n FROM ${database}.t FINAL`,
        format: 'JSONEachRow',
      });
      expect(await result.json()).toEqual([{ s: '1.50000001', n: '2' }]);
    } finally {
      await client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
      await client.close();
    }
  });
});
