import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type Admin,
  createKafka,
  LingeringProducer,
  type Message,
  TopicPartitionCount,
} from '../../libs/kafka/index.js';
import {
  kafkaProduceBatchSize,
  kafkaProduceCalls,
  kafkaProduceDuration,
} from '../../libs/observability/index.js';
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

  function producerOf(topic: string, options: { lingerMs?: number; maxItems?: number } = {}) {
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
        ...options,
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

  it('connects with its route read, and counts each produce call by its path and its items', async () => {
    await broker.createTopic('paths', 2);
    await admin.connect();
    // placed messages can go straight to the leader; keyed ones go through kafkajs
    const producer = new LingeringProducer<string>(
      createKafka({ brokers: broker.brokers, clientId: 'lingering-test' }),
      admin,
      {
        topic: 'paths',
        lingerMs: 20,
        toMessages: (items): Message[] =>
          items.map((item) =>
            item.startsWith('key:') ? { key: item, value: item } : { partition: 0, value: item },
          ),
      },
    );
    const calls = {
      leader: kafkaProduceCalls.labels('leader'),
      kafkajs: kafkaProduceCalls.labels('kafkajs'),
    };
    const sizes = kafkaProduceBatchSize.labels();
    const counted = () => ({ leader: calls.leader.value, kafkajs: calls.kafkajs.value, items: sizes.sum });
    const before = counted();
    try {
      await producer.connect();
      await producer.send(['placed']);
      expect(counted()).toEqual({ ...before, leader: before.leader + 1, items: before.items + 1 });
      await producer.send(['key:a']);
      expect(counted()).toEqual({
        leader: before.leader + 1,
        kafkajs: before.kafkajs + 1,
        items: before.items + 2,
      });
      // two callers of one turn: one call of their three items
      await Promise.all([producer.send(['b', 'c']), producer.send(['d'])]);
      expect(counted()).toEqual({
        leader: before.leader + 2,
        kafkajs: before.kafkajs + 1,
        items: before.items + 5,
      });
      expect(await written('paths')).toBe(5);
      await producer.disconnect();
      // once disconnected, nothing more goes straight to a leader
      await producer.send(['late']).catch(() => {});
      expect(counted().leader).toBe(before.leader + 2);
    } finally {
      await producer.disconnect();
    }
  });

  it('runs two produce calls at once; a third window lingers, unless it holds maxItems', async () => {
    await broker.createTopic('in-flight', 2);
    await admin.connect();
    const { producer, windows } = producerOf('in-flight', { lingerMs: 1000, maxItems: 3 });
    const sent = () => windows.map((window) => window.items);
    try {
      await producer.connect();
      await broker.pause(); // produce calls stay in flight
      const calls = [producer.send(['a'])];
      await vi.waitFor(() => expect(sent()).toEqual([['a']]));
      calls.push(producer.send(['b']));
      await vi.waitFor(() => expect(sent()).toEqual([['a'], ['b']]), { timeout: 500 });
      calls.push(producer.send(['c']));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(windows).toHaveLength(2); // no slot free: 'c' lingers
      calls.push(producer.send(['d', 'e', 'f']));
      // maxItems reached: the window goes without its linger
      await vi.waitFor(() => expect(sent()).toEqual([['a'], ['b'], ['c', 'd', 'e', 'f']]), { timeout: 500 });
      broker.resume();
      await Promise.all(calls);
      expect(await written('in-flight')).toBe(6);
    } finally {
      broker.resume();
      await producer.disconnect();
    }
  });

  it('closes a window at once at 10,000 items by default, not one before', async () => {
    await broker.createTopic('default-max-items', 2);
    await admin.connect();
    const windows: number[] = [];
    // one message a window: the count of its items is what the test looks at
    const producer = new LingeringProducer<number>(
      createKafka({ brokers: broker.brokers, clientId: 'lingering-test' }),
      admin,
      {
        topic: 'default-max-items',
        lingerMs: 1000,
        toMessages: (items): Message[] => {
          windows.push(items.length);
          return [{ partition: 0, value: String(items.length) }];
        },
      },
    );
    try {
      await producer.connect();
      await broker.pause(); // both produce calls stay in flight
      const calls = [producer.send([0])];
      await vi.waitFor(() => expect(windows).toEqual([1]), { timeout: 500 });
      calls.push(producer.send([1]));
      await vi.waitFor(() => expect(windows).toEqual([1, 1]), { timeout: 500 });
      calls.push(producer.send(Array.from({ length: 9_999 }, (_, i) => i)));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(windows).toEqual([1, 1]); // 9,999 items linger
      calls.push(producer.send([10_000]));
      await vi.waitFor(() => expect(windows).toEqual([1, 1, 10_000]), { timeout: 500 });
      broker.resume();
      await Promise.all(calls);
    } finally {
      broker.resume();
      await producer.disconnect();
    }
  });

  it('times each produce call once, until the log acknowledged it', async () => {
    await broker.createTopic('timed', 2);
    await admin.connect();
    const { producer } = producerOf('timed');
    const durations = kafkaProduceDuration.labels();
    const before = { count: durations.count, sum: durations.sum };
    try {
      await producer.connect();
      await producer.send(['one']);
      await Promise.all([producer.send(['two']), producer.send(['three'])]);
      expect(durations.count).toBe(before.count + 2);
      expect(durations.sum).toBeGreaterThan(before.sum);
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

  it('reads the partition count again at exactly 30 s after a read', async () => {
    await broker.createTopic('counted-at-30s', 2);
    await admin.connect();
    let now = Date.now();
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    const reads = vi.spyOn(admin, 'fetchTopicMetadata');
    try {
      const count = new TopicPartitionCount(admin, 'counted-at-30s');
      expect(await count.current()).toBe(2);
      now += 29_999;
      expect(await count.current()).toBe(2);
      expect(reads).toHaveBeenCalledTimes(1);
      now += 1;
      expect(await count.current()).toBe(2);
      expect(reads).toHaveBeenCalledTimes(2);
    } finally {
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
