import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  AnswerFrames,
  BrokerConnection,
  DirectProducer,
  KafkaProduceRefused,
  produceRefusal,
} from '../../libs/kafka/direct-producer.js';
import { type Admin, createKafka, isKafkaOutage, type Kafka, type Message } from '../../libs/kafka/index.js';
import { type KafkaTestBroker, startKafkaTestBroker } from '../helpers/kafka-test-broker.js';

const PRODUCE = 0;
const NOT_LEADER_FOR_PARTITION = 6;
const MESSAGE_TOO_LARGE = 10;

/** Produce requests written straight to the leaders, against the real test broker. */
describe('DirectProducer', () => {
  let broker: KafkaTestBroker;
  let kafka: Kafka;
  let admin: Admin;
  /**
   * The test's own reads of the topics' offsets, on a client of their own: kafkajs keeps one
   * metadata set per client, and a producer's route read on `admin` (fetchTopicMetadata of a
   * topic it has not seen) replaces that set with its own topic's alone. One landing between the
   * two ListOffsets of fetchTopicOffsets left the second without the topic's partitions (CI).
   */
  let observer: Admin;
  beforeAll(async () => {
    broker = await startKafkaTestBroker(3);
    kafka = createKafka({ brokers: broker.brokers, clientId: 'direct-test' });
    admin = kafka.admin();
    observer = kafka.admin();
    await Promise.all([admin.connect(), observer.connect()]);
  });
  afterAll(async () => {
    await admin?.disconnect();
    await observer?.disconnect();
    await broker?.stop();
  });

  const highWatermarks = async (topic: string) =>
    (await observer.fetchTopicOffsets(topic))
      .sort((a, b) => a.partition - b.partition)
      .map((partition) => Number(partition.high));
  const sum = (numbers: number[]) => numbers.reduce((a, b) => a + b, 0);

  /** A producer of a new topic with `partitions`, its route not read yet. */
  async function unroutedProducer(topic: string, partitions: number, requestTimeoutMs = 5000) {
    await broker.createTopic(topic, partitions);
    return new DirectProducer(admin, { topic, clientId: 'direct-test', requestTimeoutMs });
  }

  async function routedProducer(topic: string, partitions: number, requestTimeoutMs = 5000) {
    const producer = await unroutedProducer(topic, partitions, requestTimeoutMs);
    await producer.readRoute();
    expect(producer.routed).toBe(true);
    return producer;
  }
  const kafkajsRefused = vi.fn(async () => {
    throw new Error('sent through kafkajs');
  });
  beforeEach(() => {
    kafkajsRefused.mockClear();
  });

  /** Every message of `topic` from the beginning, by partition, as text. */
  async function readBack(topic: string, count: number): Promise<Map<number, string[]>> {
    const consumer = kafka.consumer({ groupId: `${topic}-reader` });
    const seen = new Map<number, string[]>();
    let total = 0;
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve) => {
        void consumer.run({
          eachMessage: async ({ partition, message }) => {
            seen.set(partition, [...(seen.get(partition) ?? []), String(message.value)]);
            if (++total === count) resolve();
          },
        });
      });
    } finally {
      await consumer.disconnect();
    }
    return seen;
  }

  it('writes unkeyed messages round robin over the partitions of every leader, without kafkajs', async () => {
    const producer = await routedProducer('direct-spread', 6);
    try {
      for (let i = 0; i < 12; i++) await producer.send([{ value: `m${i}` }], kafkajsRefused);
      expect(kafkajsRefused).not.toHaveBeenCalled();
      expect(await highWatermarks('direct-spread')).toEqual([2, 2, 2, 2, 2, 2]);
      const messages = await readBack('direct-spread', 12);
      expect([...messages.values()].flat().sort()).toEqual(
        Array.from({ length: 12 }, (_, i) => `m${i}`).sort(),
      );
    } finally {
      producer.close();
    }
  });

  it('asks for the acks of every in-sync replica (acks -1) in each request', async () => {
    const producer = await routedProducer('direct-acks', 2);
    const requests = vi.spyOn(BrokerConnection.prototype, 'request');
    try {
      await producer.send([{ partition: 0, value: 'a' }], kafkajsRefused);
      await producer.send([{ partition: 1, value: 'b' }], kafkajsRefused);
      // a produce request's body: transactional id (int16 -1 for none), then acks (int16)
      const acks = requests.mock.calls.map(([body]) => body.readInt16BE(2));
      expect(acks).toEqual([-1, -1]);
    } finally {
      requests.mockRestore();
      producer.close();
    }
  });

  it("starts each producer's round robin at a random partition, as kafkajs does", async () => {
    const topic = 'direct-random-start';
    await broker.createTopic(topic, 6);
    // twenty producers (ingest instances) of one message each: not all on the same partition
    for (let i = 0; i < 20; i++) {
      const producer = new DirectProducer(admin, { topic, clientId: 'direct-test', requestTimeoutMs: 5000 });
      try {
        await producer.readRoute();
        await expect(producer.send([{ value: `first of ${i}` }], kafkajsRefused)).resolves.toBe('leader');
      } finally {
        producer.close();
      }
    }
    const counts = await highWatermarks(topic);
    expect(sum(counts)).toBe(20);
    expect(Math.max(...counts)).toBeLessThan(20);
  });

  it('puts a message with a partition on that partition, several partitions in one call', async () => {
    const producer = await routedProducer('direct-placed', 3);
    try {
      const messages: Message[] = [
        { partition: 2, value: 'a' },
        { partition: 0, value: 'b' },
        { partition: 2, value: 'c' },
        { partition: 1, value: Buffer.from([0, 255, 1]) },
      ];
      await producer.send(messages, kafkajsRefused);
      expect(kafkajsRefused).not.toHaveBeenCalled();
      const read = await readBack('direct-placed', 4);
      expect(read.get(0)).toEqual(['b']);
      expect(read.get(2)).toEqual(['a', 'c']);
      expect(Buffer.from(read.get(1)![0]!, 'latin1')).toHaveLength(3);
    } finally {
      producer.close();
    }
  });

  it('answers each of many concurrent calls on one connection once its own request is acknowledged', async () => {
    const producer = await routedProducer('direct-pipelined', 1);
    try {
      await Promise.all(
        Array.from({ length: 200 }, (_, i) => producer.send([{ value: `p${i}` }], kafkajsRefused)),
      );
      expect(await highWatermarks('direct-pipelined')).toEqual([200]);
    } finally {
      producer.close();
    }
  });

  it('sends through kafkajs until its route is read, then straight to the leader', async () => {
    const topic = 'direct-unrouted';
    const producer = await unroutedProducer(topic, 2);
    const kafkajsProducer = kafka.producer();
    await kafkajsProducer.connect();
    try {
      expect(producer.routed).toBe(false);
      const viaKafkajs = vi.fn(() =>
        kafkajsProducer.send({ topic, acks: -1, messages: [{ value: 'first' }] }),
      );
      await producer.send([{ value: 'first' }], viaKafkajs);
      expect(viaKafkajs).toHaveBeenCalledTimes(1);
      await vi.waitFor(() => expect(producer.routed).toBe(true));
      await producer.send([{ value: 'second' }], kafkajsRefused);
      expect(sum(await highWatermarks(topic))).toBe(2);
    } finally {
      producer.close();
      await kafkajsProducer.disconnect();
    }
  });

  it('hands kafkajs a call it cannot encode (timestamps 2^52 ms apart), keeping its route', async () => {
    const topic = 'direct-unencodable';
    const producer = await routedProducer(topic, 1);
    const kafkajsProducer = kafka.producer();
    await kafkajsProducer.connect();
    try {
      // integer timestamps (what the encoder takes; kafkajs' type says string) too far apart
      const at = (ms: number) => ms as unknown as string;
      const messages: Message[] = [
        { value: 'old', timestamp: at(1) },
        { value: 'new', timestamp: at(2 ** 52) },
      ];
      const viaKafkajs = vi.fn(() => kafkajsProducer.send({ topic, acks: -1, messages }));
      expect(await producer.send(messages, viaKafkajs)).toBe('kafkajs');
      expect(viaKafkajs).toHaveBeenCalledTimes(1);
      expect(producer.routed).toBe(true);
      expect(await producer.send([{ value: 'plain' }], kafkajsRefused)).toBe('leader');
    } finally {
      producer.close();
      await kafkajsProducer.disconnect();
    }
  });

  it('sends a refused call once more through kafkajs, then straight again', async () => {
    const producer = await routedProducer('direct-refused', 2);
    const kafkajsProducer = kafka.producer();
    await kafkajsProducer.connect();
    try {
      await broker.injectErrors(PRODUCE, NOT_LEADER_FOR_PARTITION, 1);
      // while kafkajs sends, the stale route is not used by other calls
      const viaKafkajs = vi.fn(() => {
        expect(producer.routed).toBe(false);
        return kafkajsProducer.send({ topic: 'direct-refused', acks: -1, messages: [{ value: 'once' }] });
      });
      await producer.send([{ value: 'once' }], viaKafkajs);
      expect(viaKafkajs).toHaveBeenCalledTimes(1);
      expect(sum(await highWatermarks('direct-refused'))).toBe(1);
      await vi.waitFor(() => expect(producer.routed).toBe(true));
      await producer.send([{ value: 'direct again' }], kafkajsRefused);
      expect(sum(await highWatermarks('direct-refused'))).toBe(2);
    } finally {
      producer.close();
      await kafkajsProducer.disconnect();
    }
  });

  it('reads the route again after a refused call that kafkajs fails too, passing on its failure', async () => {
    const producer = await routedProducer('direct-refused-twice', 1);
    try {
      await broker.injectErrors(PRODUCE, NOT_LEADER_FOR_PARTITION, 1);
      await expect(producer.send([{ value: 'refused' }], kafkajsRefused)).rejects.toThrow(
        'sent through kafkajs',
      );
      expect(kafkajsRefused).toHaveBeenCalledTimes(1);
      await vi.waitFor(() => expect(producer.routed).toBe(true));
    } finally {
      producer.close();
    }
  });

  it('passes on a refusal that no retry can change, without kafkajs', async () => {
    const producer = await routedProducer('direct-too-large', 1);
    try {
      await broker.injectErrors(PRODUCE, MESSAGE_TOO_LARGE, 1);
      const error = await producer.send([{ value: 'big' }], kafkajsRefused).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KafkaProduceRefused);
      expect(error).toMatchObject({
        errorCode: MESSAGE_TOO_LARGE,
        topic: 'direct-too-large',
        partition: 0,
        retriable: false,
      });
      expect(isKafkaOutage(error)).toBe(false);
      expect(kafkajsRefused).not.toHaveBeenCalled();
      expect(await highWatermarks('direct-too-large')).toEqual([0]);
    } finally {
      producer.close();
    }
  });

  it('follows a partition whose leader moved to another broker', async () => {
    const topic = 'direct-moved';
    const producer = await routedProducer(topic, 1);
    const kafkajsProducer = kafka.producer();
    await kafkajsProducer.connect();
    try {
      await producer.send([{ partition: 0, value: 'before' }], kafkajsRefused);
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
      const leader = topics[0]!.partitions[0]!.leader;
      await broker.moveLeader(topic, 0, (leader % 3) + 1);
      const viaKafkajs = vi.fn(() =>
        kafkajsProducer.send({ topic, acks: -1, messages: [{ partition: 0, value: 'moved' }] }),
      );
      await producer.send([{ partition: 0, value: 'moved' }], viaKafkajs);
      expect(viaKafkajs).toHaveBeenCalledTimes(1);
      await vi.waitFor(async () => {
        await producer.readRoute();
        await producer.send([{ partition: 0, value: 'after' }], kafkajsRefused);
      });
      expect(await highWatermarks(topic)).toEqual([3]);
    } finally {
      producer.close();
      await kafkajsProducer.disconnect();
    }
  });

  it('fails a call the broker does not answer in time as an outage, without kafkajs, and recovers', async () => {
    const producer = await routedProducer('direct-stalled', 1, 300);
    try {
      await producer.send([{ value: 'connects first' }], kafkajsRefused);
      await broker.pause();
      const started = Date.now();
      const error = await producer.send([{ value: 'stalled' }], kafkajsRefused).catch((e: unknown) => e);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(Date.now() - started).toBeLessThan(800);
      expect(error).toMatchObject({ name: 'KafkaProduceTimeout' });
      expect(isKafkaOutage(error)).toBe(true);
      expect(kafkajsRefused).not.toHaveBeenCalled();
      broker.resume();
      await producer.send([{ value: 'after' }], kafkajsRefused);
      // the stalled request may or may not have been written before the broker froze
      expect(sum(await highWatermarks('direct-stalled'))).toBeGreaterThanOrEqual(2);
    } finally {
      broker.resume();
      producer.close();
    }
  });

  it("times each request from its own write: an answered request's deadline ends nothing later", async () => {
    const producer = await routedProducer('direct-deadlines', 1, 400);
    try {
      await producer.send([{ value: 'answered' }], kafkajsRefused);
      // the answered request's deadline falls while the next one waits
      await new Promise((resolve) => setTimeout(resolve, 200));
      await broker.pause();
      const started = Date.now();
      const error = await producer.send([{ value: 'stalled' }], kafkajsRefused).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'KafkaProduceTimeout' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    } finally {
      broker.resume();
      producer.close();
    }
  });

  it('waits for an answer slower than the connect timeout, within the request timeout', async () => {
    const producer = await routedProducer('direct-slow-answer', 1);
    try {
      await producer.send([{ value: 'connects first' }], kafkajsRefused);
      await broker.pause();
      const sent = producer.send([{ value: 'answered late' }], kafkajsRefused);
      // past the connect timeout (1 s) of the idle-looking connection
      await new Promise((resolve) => setTimeout(resolve, 1300));
      broker.resume();
      await expect(sent).resolves.toBe('leader');
      expect(kafkajsRefused).not.toHaveBeenCalled();
    } finally {
      broker.resume();
      producer.close();
    }
  });

  it('keeps a connection that sat idle past the connect timeout', async () => {
    const producer = await routedProducer('direct-idle', 1);
    try {
      await producer.send([{ value: 'opens' }], kafkajsRefused);
      await new Promise((resolve) => setTimeout(resolve, 1300));
      await producer.send([{ value: 'idle, then sent' }], kafkajsRefused);
      expect(kafkajsRefused).not.toHaveBeenCalled();
      expect(await highWatermarks('direct-idle')).toEqual([2]);
    } finally {
      producer.close();
    }
  });

  it('reads a route it could not read once the next send went through kafkajs', async () => {
    const topic = 'direct-read-later';
    const producer = await unroutedProducer(topic, 1);
    const kafkajsProducer = kafka.producer();
    try {
      await broker.setDown();
      await producer.readRoute();
      expect(producer.routed).toBe(false);
      await broker.setUp();
      await kafkajsProducer.connect();
      await new Promise((resolve) => setTimeout(resolve, 1000)); // reads are a second apart at most
      await producer.send([{ value: 'via kafkajs' }], () =>
        kafkajsProducer.send({ topic, acks: -1, messages: [{ value: 'via kafkajs' }] }),
      );
      // well before the 30 s refresh
      await vi.waitFor(() => expect(producer.routed).toBe(true), { timeout: 3000 });
    } finally {
      await broker.setUp();
      producer.close();
      await kafkajsProducer.disconnect();
    }
  });

  it('opens no connection once closed: a late call goes through kafkajs', async () => {
    const producer = await routedProducer('direct-closed', 1);
    producer.close();
    const viaKafkajs = vi.fn(async () => 'sent');
    await expect(producer.send([{ value: 'late' }], viaKafkajs)).resolves.toBe('kafkajs');
    expect(viaKafkajs).toHaveBeenCalledTimes(1);
    expect(await highWatermarks('direct-closed')).toEqual([0]);
  });

  it('reads the route again 30 s after its last read, not before', async () => {
    const producer = await unroutedProducer('direct-refresh', 1);
    let now = Date.now();
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    const reads = vi.spyOn(admin, 'fetchTopicMetadata');
    try {
      await producer.readRoute();
      expect(reads).toHaveBeenCalledTimes(1);
      now += 29_999;
      await expect(producer.send([{ value: 'fresh' }], kafkajsRefused)).resolves.toBe('leader');
      expect(reads).toHaveBeenCalledTimes(1);
      now += 1;
      await expect(producer.send([{ value: 'stale' }], kafkajsRefused)).resolves.toBe('leader');
      expect(reads).toHaveBeenCalledTimes(2);
      await producer.readRoute(); // joins the read that call began
      expect(reads).toHaveBeenCalledTimes(2);
    } finally {
      vi.restoreAllMocks();
      producer.close();
    }
  });

  it('routes unkeyed messages only to partitions that have a leader', async () => {
    const topic = 'direct-leaderless';
    const producer = await unroutedProducer(topic, 2);
    try {
      await broker.moveLeader(topic, 1, -1);
      await producer.readRoute();
      expect(producer.routed).toBe(true);
      for (let i = 0; i < 4; i++) {
        await expect(producer.send([{ value: `m${i}` }], kafkajsRefused)).resolves.toBe('leader');
      }
      expect(kafkajsRefused).not.toHaveBeenCalled();
      await broker.moveLeader(topic, 1, 1); // its offsets can be read again
      expect(await highWatermarks(topic)).toEqual([4, 0]);
    } finally {
      producer.close();
    }
  });

  it('counts a topic none of whose partitions has a leader as not routed', async () => {
    const topic = 'direct-no-leader';
    const producer = await unroutedProducer(topic, 1);
    try {
      await broker.moveLeader(topic, 0, -1);
      await producer.readRoute();
      expect(producer.routed).toBe(false);
    } finally {
      producer.close();
    }
  });

  it('while its route is unknown, reads it again after a send at most once a second', async () => {
    const topic = 'direct-unrouted-retry';
    const producer = await unroutedProducer(topic, 1);
    await broker.moveLeader(topic, 0, -1);
    let now = Date.now();
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    const reads = vi.spyOn(admin, 'fetchTopicMetadata');
    const viaKafkajs = vi.fn(async () => 'sent');
    try {
      await producer.readRoute();
      expect(producer.routed).toBe(false);
      now += 999;
      await expect(producer.send([{ value: 'a' }], viaKafkajs)).resolves.toBe('kafkajs');
      expect(reads).toHaveBeenCalledTimes(1);
      now += 1;
      await expect(producer.send([{ value: 'b' }], viaKafkajs)).resolves.toBe('kafkajs');
      expect(reads).toHaveBeenCalledTimes(2);
      await producer.readRoute(); // joins the read that send began
      expect(reads).toHaveBeenCalledTimes(2);
      await expect(producer.send([{ value: 'c' }], viaKafkajs)).resolves.toBe('kafkajs');
      expect(reads).toHaveBeenCalledTimes(2);
    } finally {
      vi.restoreAllMocks();
      producer.close();
    }
  });

  it('reads the route once for calls that ask while a read is under way', async () => {
    const producer = await unroutedProducer('direct-one-read', 1);
    const reads = vi.spyOn(admin, 'fetchTopicMetadata');
    try {
      await Promise.all([producer.readRoute(), producer.readRoute(), producer.readRoute()]);
      expect(reads).toHaveBeenCalledTimes(1);
      expect(producer.routed).toBe(true);
    } finally {
      vi.restoreAllMocks();
      producer.close();
    }
  });

  it('forgets its route when a read of it fails', async () => {
    const producer = await routedProducer('direct-read-fails', 1);
    try {
      await broker.setDown();
      await producer.readRoute();
      expect(producer.routed).toBe(false);
    } finally {
      await broker.setUp();
      producer.close();
    }
  });

  /** Calls the route cannot take go through kafkajs; the route is kept and not read again for them. */
  it.each([
    ['a keyed message without a partition (kafkajs hashes its key)', { key: 'org-1', value: 'keyed' }],
    ['a message keyed by the empty string (kafkajs hashes that key too)', { key: '', value: 'empty-key' }],
    ['a message for a partition the route does not know', { partition: 7, value: 'nowhere' }],
    ['a message with headers (only kafkajs encodes them)', { value: 'traced', headers: { trace: 'abc' } }],
  ])('sends a call holding %s through kafkajs, keeping its route', async (_, message: Message) => {
    const topic = `direct-unencodable-${message.value}`;
    const producer = await routedProducer(topic, 1);
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 5000);
    const reads = vi.spyOn(admin, 'fetchTopicMetadata');
    try {
      const viaKafkajs = vi.fn(async () => {
        expect(producer.routed).toBe(true);
      });
      await expect(producer.send([{ value: 'routable' }, message], viaKafkajs)).resolves.toBe('kafkajs');
      expect(viaKafkajs).toHaveBeenCalledTimes(1);
      expect(producer.routed).toBe(true);
      expect(reads).not.toHaveBeenCalled();
      // the clock back before kafkajs' admin reads the offsets: its own timing follows Date.now
      vi.restoreAllMocks();
      // nothing of the call went straight to a leader
      expect(await highWatermarks(topic)).toEqual([0]);
    } finally {
      vi.restoreAllMocks();
      producer.close();
    }
  });

  it('fails a call in flight when closed, without handing it to kafkajs', async () => {
    const producer = await routedProducer('direct-closed-in-flight', 1);
    const sent = producer.send([{ value: 'in flight' }], kafkajsRefused);
    producer.close();
    await expect(sent).rejects.toThrow('producer closed');
    expect(kafkajsRefused).not.toHaveBeenCalled();
  });

  it('hands the call to kafkajs when the leader cannot be reached, and passes on its failure', async () => {
    const producer = await routedProducer('direct-down', 1);
    try {
      await broker.setDown();
      const downError = Object.assign(new Error('down'), { code: 'ECONNREFUSED' });
      const viaKafkajs = vi.fn(async () => {
        throw downError;
      });
      await expect(producer.send([{ value: 'lost' }], viaKafkajs)).rejects.toBe(downError);
      expect(viaKafkajs).toHaveBeenCalledTimes(1);
    } finally {
      await broker.setUp();
      producer.close();
    }
  });
});

describe('produceRefusal', () => {
  /** A Produce v3 answer after its length: correlation id, topics, partitions, throttle time. */
  function answer(topics: { name: string; partitions: [number, number][] }[]): Buffer {
    const parts: Buffer[] = [int32(7), int32(topics.length)];
    for (const { name, partitions } of topics) {
      const nameBytes = Buffer.from(name);
      const length = Buffer.alloc(2);
      length.writeInt16BE(nameBytes.length);
      parts.push(length, nameBytes, int32(partitions.length));
      for (const [partition, errorCode] of partitions) {
        const entry = Buffer.alloc(4 + 2 + 8 + 8);
        entry.writeInt32BE(partition, 0);
        entry.writeInt16BE(errorCode, 4);
        entry.writeBigInt64BE(123n, 6);
        entry.writeBigInt64BE(-1n, 14);
        parts.push(entry);
      }
    }
    parts.push(int32(0));
    return Buffer.concat(parts);
  }
  const int32 = (value: number) => {
    const bytes = Buffer.alloc(4);
    bytes.writeInt32BE(value);
    return bytes;
  };

  it('names the first partition that reports an error, past the ones that do not', () => {
    const refusal = produceRefusal(
      answer([
        { name: 'a', partitions: [[0, 0]] },
        {
          name: 'usage.events',
          partitions: [
            [1, 0],
            [4, 19],
            [5, 6],
          ],
        },
      ]),
    );
    expect(refusal).toBeInstanceOf(KafkaProduceRefused);
    expect(refusal).toMatchObject({ errorCode: 19, topic: 'usage.events', partition: 4 });
  });

  it("takes Kafka's unknown server error (-1) for a refusal that no retry changes", () => {
    expect(produceRefusal(answer([{ name: 't', partitions: [[0, -1]] }]))).toMatchObject({
      errorCode: -1,
      retriable: false,
    });
  });

  it("takes exactly Kafka's retriable produce errors as retriable", () => {
    // corrupt message, unknown topic or partition, leader not available, not the leader, request
    // timed out, network exception, not enough replicas (before, after append), storage error
    const retriable = [2, 3, 5, 6, 7, 13, 19, 20, 56];
    for (const code of [-1, 1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 17, 18, 19, 20, 21, 56, 87]) {
      expect(new KafkaProduceRefused(code, 't', 0).retriable, `code ${code}`).toBe(retriable.includes(code));
    }
  });

  it('finds nothing in an answer whose every partition succeeded', () => {
    expect(
      produceRefusal(
        answer([
          {
            name: 't',
            partitions: [
              [0, 0],
              [1, 0],
            ],
          },
        ]),
      ),
    ).toBeUndefined();
  });
});

describe('AnswerFrames', () => {
  const framed = (...bodies: string[]) =>
    Buffer.concat(
      bodies.map((body) => {
        const bytes = Buffer.alloc(4 + body.length);
        bytes.writeInt32BE(body.length);
        bytes.write(body, 4);
        return bytes;
      }),
    );
  const texts = (answers: Buffer[]) => answers.map(String);

  it('keeps an answer split across chunks until its last byte, the length itself split too', () => {
    const frames = new AnswerFrames();
    const bytes = framed('first answer');
    expect(frames.push(bytes.subarray(0, 2))).toEqual([]);
    expect(frames.push(bytes.subarray(2, 9))).toEqual([]);
    expect(texts(frames.push(bytes.subarray(9, bytes.length - 1)))).toEqual([]);
    expect(texts(frames.push(bytes.subarray(bytes.length - 1)))).toEqual(['first answer']);
  });

  it('reads several answers of one chunk in order, keeping the start of the next', () => {
    const frames = new AnswerFrames();
    const bytes = framed('a', '', 'bc', 'next');
    expect(texts(frames.push(bytes.subarray(0, bytes.length - 3)))).toEqual(['a', '', 'bc']);
    expect(texts(frames.push(bytes.subarray(bytes.length - 3)))).toEqual(['next']);
  });

  it('reads an empty answer that ends a chunk exactly', () => {
    const frames = new AnswerFrames();
    expect(texts(frames.push(framed('')))).toEqual(['']);
    expect(texts(frames.push(framed('after')))).toEqual(['after']);
  });

  it('refuses a negative length, -1 too', () => {
    for (const length of [-2, -1]) {
      const bytes = Buffer.alloc(4);
      bytes.writeInt32BE(length);
      expect(() => new AnswerFrames().push(bytes), String(length)).toThrow(/negative length/);
    }
  });
});
