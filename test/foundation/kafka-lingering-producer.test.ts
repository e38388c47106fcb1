import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type Admin,
  createKafka,
  LingeringProducer,
  type Message,
  TopicPartitionCount,
} from '../../libs/kafka/index.js';
import { type KafkaTestBroker, startKafkaTestBroker } from '../helpers/kafka-test-broker.js';

/** The producer under load of many callers, on a broker of its own (taken down in one test). */
describe('LingeringProducer', () => {
  let broker: KafkaTestBroker;
  let admin: Admin;
  beforeAll(async () => {
    broker = await startKafkaTestBroker();
    admin = createKafka({ brokers: broker.brokers, clientId: 'lingering-test' }).admin();
  });
  afterAll(async () => {
    await admin?.disconnect();
    await broker?.stop();
  });

  /** Messages in the log of `topic` (its partitions' high watermarks). */
  const written = async (topic: string) =>
    (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);

  function producerOf(topic: string) {
    const windows: { items: string[]; partitions: number | undefined }[] = [];
    const producer = new LingeringProducer<string>(
      createKafka({ brokers: broker.brokers, clientId: 'lingering-test' }),
      admin,
      {
        topic,
        lingerMs: 20,
        toMessages: (items, partitions): Message[] => {
          windows.push({ items: [...items], partitions });
          return items.map((item) => ({ key: item, value: item }));
        },
      },
    );
    return { producer, windows };
  }

  it("writes every caller's items of one turn in one produce call, given the partition count", async () => {
    await broker.createTopic('gathered', 3);
    await admin.connect();
    const { producer, windows } = producerOf('gathered');
    try {
      await producer.connect();
      await Promise.all([producer.send(['a']), producer.send(['b', 'c']), producer.send(['d'])]);
      expect(windows).toEqual([{ items: ['a', 'b', 'c', 'd'], partitions: 3 }]);
      expect(await written('gathered')).toBe(4);
    } finally {
      await producer.disconnect();
    }
  });

  it('writes the open window before it disconnects', async () => {
    await broker.createTopic('closing', 2);
    await admin.connect();
    const { producer } = producerOf('closing');
    await producer.connect();
    const sent = producer.send(['last']);
    await producer.disconnect();
    await expect(sent).resolves.toBeUndefined();
    expect(await written('closing')).toBe(1);
  });

  it('reads the partition count again 30 s after a read, not before, keeping it while the broker is down', async () => {
    const realNow = Date.now.bind(Date);
    let skipped = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skipped);
    try {
      await admin.connect();
      await broker.setDown();
      const count = new TopicPartitionCount(admin, 'counted');
      expect(await count.current()).toBeUndefined();
      await broker.setUp();
      await broker.createTopic('counted', 3);
      skipped += 25_000;
      expect(await count.current()).toBeUndefined();
      skipped += 5_000;
      expect(await count.current()).toBe(3);
      await broker.setDown();
      skipped += 30_000;
      expect(await count.current()).toBe(3);
    } finally {
      await broker.setUp();
      vi.restoreAllMocks();
    }
  });

  it('rejects the callers of a window the log did not take, and connects again once it is back', async () => {
    await broker.createTopic('outage', 2);
    const { producer } = producerOf('outage');
    try {
      await broker.setDown();
      await expect(producer.send(['lost'])).rejects.toThrow();
      await broker.setUp();
      await expect(producer.send(['kept'])).resolves.toBeUndefined();
      expect(await written('outage')).toBe(1);
    } finally {
      await broker.setUp();
      await producer.disconnect();
    }
  });
});
