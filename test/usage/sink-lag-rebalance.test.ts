import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Admin, createKafka, type Kafka } from '../../libs/kafka/index.js';
import { createLogger, type Logger } from '../../libs/log/index.js';
import { sinkEventsWritten, sinkLagMessages } from '../../libs/observability/index.js';
import { encodeLogMessages, KafkaSinkRunner, type UsageSink } from '../../libs/usage/index.js';
import { type KafkaTestBroker, startKafkaTestBroker } from '../helpers/kafka-test-broker.js';
import { runLogger } from '../helpers/run-log.js';
import { uniqueName } from '../helpers/services.js';
import { eventually } from './support.js';

/**
 * The lag gauge of a sink runner counts only the partitions its member holds, each from where the
 * group's commit stands: not a partition a rebalance took away (its new holder reports it), nor a
 * partition just taken over from its first offset. On a Kafka test broker of this file's own, which
 * can refuse a commit as a broker does during a rebalance; each test has a topic of two partitions
 * and a consumer group of its own. The sinks write nothing: only the offsets matter here.
 *
 * Nor does a runner ever commit the offsets it read of a partition a rebalance took from it: the
 * broker accepts a commit from any member of the current generation, so such a commit would move the
 * group's commit back behind the partition's new holder's, and the billing run's catch-up
 * (docs/architecture.md) would wait on a group that is behind.
 */
const OFFSET_COMMIT = 8;
const REBALANCE_IN_PROGRESS = 27;

let broker: KafkaTestBroker;
let kafka: Kafka;
let admin: Admin;

beforeAll(async () => {
  broker = await startKafkaTestBroker();
  kafka = createKafka({ brokers: broker.brokers, clientId: 'sink-lag-rebalance' });
  admin = kafka.admin();
  await admin.connect();
});
afterAll(async () => {
  await admin?.disconnect();
  await broker?.stop();
});

async function newTopic(label: string): Promise<string> {
  const topic = uniqueName(label);
  await broker.createTopic(topic, 2);
  return topic;
}

/** One usage message on each of `partitions`, in one produce call. */
async function produce(topic: string, partitions: number[]): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    const message = () =>
      encodeLogMessages([
        {
          id: randomUUID(),
          orgId: 1,
          subscriptionItemId: 1,
          idempotencyKey: randomUUID(),
          quantity: '1',
          occurredAtMs: Date.UTC(2026, 9, 15, 12),
          recordedAtMs: Date.UTC(2026, 9, 15, 12, 0, 1),
        },
      ])[0]!;
    await producer.send({
      topic,
      acks: -1,
      messages: partitions.map((partition) => ({ ...message(), partition })),
    });
  } finally {
    await producer.disconnect();
  }
}

/** The offsets the group committed on `topic`, summed (a partition never committed: 0). */
async function committed(topic: string, groupId: string): Promise<number> {
  const [ofTopic] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return (ofTopic?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
}

/** A sink that writes nothing, under a name of its own (the gauges are labelled by sink name). */
function sink(label: string, over: Partial<UsageSink> = {}): UsageSink {
  return { name: uniqueName(label), write: async () => {}, writeVoids: async () => {}, ...over };
}

function runner(
  topic: string,
  groupId: string,
  of: UsageSink,
  log: Logger = runLogger('sink-lag'),
  flushMs = 200,
) {
  return new KafkaSinkRunner({
    kafka: createKafka({ brokers: broker.brokers, clientId: 'sink-lag-rebalance' }, log, 'patient'),
    topic,
    groupId,
    sink: of,
    batchSize: 100,
    flushMs,
    log,
  });
}

/** The group's committed offset of each partition of `topic` (-1: never committed). */
async function committedByPartition(topic: string, groupId: string): Promise<number[]> {
  const [ofTopic] = await admin.fetchOffsets({ groupId, topics: [topic] });
  const offsets = [-1, -1];
  for (const p of ofTopic?.partitions ?? []) offsets[p.partition] = Number(p.offset);
  return offsets;
}

const written = async (name: string) =>
  (await sinkEventsWritten.get()).values.find((value) => value.labels.sink === name)?.value;

const gauge = async (metric: typeof sinkLagMessages, name: string) =>
  (await metric.get()).values.find((value) => value.labels.sink === name)?.value;

describe("the sink runner's lag gauge across rebalances", () => {
  it('drops a partition taken from it that it had read and could not commit', {
    timeout: 90_000,
  }, async () => {
    const topic = await newTopic('lag_revoked');
    const groupId = `${topic}-group`;
    const first = sink('lag-first');
    const second = sink('lag-second');
    const lines: { msg: string }[] = [];
    const log = createLogger({
      level: 'warn',
      service: 'sink-lag',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    const one = runner(topic, groupId, first, log);
    const two = runner(topic, groupId, second);
    try {
      await produce(topic, [0, 1]);
      await one.start();
      await eventually(async () => {
        expect(await committed(topic, groupId)).toBe(2);
        expect(await gauge(sinkLagMessages, first.name)).toBe(0);
      }, 20_000);

      // a message on each partition, read and written; its commit refused, as during a rebalance
      await broker.injectErrors(OFFSET_COMMIT, REBALANCE_IN_PROGRESS, 1);
      await produce(topic, [0, 1]);
      await eventually(async () => {
        expect(lines.some((line) => line.msg === 'could not commit sink offsets')).toBe(true);
        expect(await gauge(sinkLagMessages, first.name)).toBe(2);
      }, 20_000);
      expect(await committed(topic, groupId)).toBe(2);

      // the second member takes one partition; each member reads its own again from the group's
      // commit and commits it: the group is caught up
      await two.start();
      await eventually(async () => {
        expect(await committed(topic, groupId)).toBe(4);
        expect(await gauge(sinkLagMessages, second.name)).toBe(0);
      }, 60_000);
      // (one event of the message the first member could not commit)
      expect(await written(second.name)).toBe(1);
      // and so is the first member: the partition it lost is no longer its lag
      await eventually(async () => expect(await gauge(sinkLagMessages, first.name)).toBe(0), 5000);
    } finally {
      await two.stop();
      await one.stop();
    }
  });

  it("counts a partition it starts reading from the group's commit, not from offset 0", {
    timeout: 60_000,
  }, async () => {
    const topic = await newTopic('lag_taken_over');
    const groupId = `${topic}-group`;
    await produce(topic, [0]);
    await produce(topic, [0]);
    await produce(topic, [0]);
    const earlier = runner(topic, groupId, sink('lag-earlier'));
    await earlier.start();
    try {
      await eventually(async () => expect(await committed(topic, groupId)).toBe(3), 20_000);
    } finally {
      await earlier.stop();
    }

    // one message more, which the next member reads and cannot write
    await produce(topic, [0]);
    let down = true;
    let attempts = 0;
    const failing = sink('lag-later', {
      write: async () => {
        if (!down) return;
        attempts++;
        throw new Error('the store is down');
      },
    });
    const later = runner(topic, groupId, failing);
    await later.start();
    try {
      await eventually(async () => {
        expect(attempts).toBeGreaterThanOrEqual(2);
        expect(await gauge(sinkLagMessages, failing.name)).toBe(1);
      }, 20_000);
      expect(await committed(topic, groupId)).toBe(3);
    } finally {
      down = false;
      await later.stop();
    }
  });
});

describe("the sink runner's commits across rebalances", () => {
  /**
   * The second member joins and takes one of the partitions; returns that partition once the second
   * member has committed its one message, the first member having committed nothing.
   */
  async function secondTakesAPartition(topic: string, groupId: string, two: KafkaSinkRunner) {
    await two.start();
    let taken = -1;
    await eventually(async () => {
      const offsets = await committedByPartition(topic, groupId);
      expect([...offsets].sort((a, b) => a - b)).toEqual([-1, 1]);
      taken = offsets.indexOf(1);
    }, 60_000);
    return taken;
  }

  it('never commits the buffered offsets of a partition taken from it', { timeout: 120_000 }, async () => {
    const topic = await newTopic('commit_revoked');
    const groupId = `${topic}-group`;
    const first = sink('commit-first');
    // the first member's flush timer never fires during the test: only its stop() flushes
    const one = runner(topic, groupId, first, undefined, 600_000);
    const two = runner(topic, groupId, sink('commit-second'));
    let oneStopped = false;
    try {
      await produce(topic, [0, 1]);
      await one.start();
      // it has read the message of each partition, and buffers them
      await eventually(async () => expect(await gauge(sinkLagMessages, first.name)).toBe(2), 20_000);

      const taken = await secondTakesAPartition(topic, groupId, two);
      // two messages more on the partition taken, which its new holder reads and commits
      await produce(topic, [taken, taken]);
      await eventually(
        async () => expect((await committedByPartition(topic, groupId))[taken]).toBe(3),
        20_000,
      );

      // the first member writes what it buffered: it commits the partition it holds, and not the
      // one taken from it (the group's commit of it stays at the log's end)
      oneStopped = true;
      await one.stop();
      const offsets = await committedByPartition(topic, groupId);
      expect(offsets[taken]).toBe(3);
      expect(offsets[1 - taken]).toBe(1);
    } finally {
      await two.stop();
      if (!oneStopped) await one.stop();
    }
  });

  it('never commits a partition taken from it while a write of its messages went on', {
    timeout: 120_000,
  }, async () => {
    const topic = await newTopic('commit_revoked_in_flight');
    const groupId = `${topic}-group`;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let writing = 0;
    // its first write holds until released: the flush has taken its offsets, and not committed them
    const first = sink('commit-in-flight-first', {
      write: async (events) => {
        if (!events.length) return;
        writing = events.length;
        await released;
      },
    });
    const one = runner(topic, groupId, first);
    const two = runner(topic, groupId, sink('commit-in-flight-second'));
    try {
      await produce(topic, [0, 1]);
      await one.start();
      // (the message of each partition)
      await eventually(async () => expect(writing).toBe(2), 20_000);

      const taken = await secondTakesAPartition(topic, groupId, two);
      await produce(topic, [taken, taken]);
      await eventually(
        async () => expect((await committedByPartition(topic, groupId))[taken]).toBe(3),
        20_000,
      );

      // the write goes through: the flush commits the partition the member holds, only
      release();
      await eventually(
        async () => expect((await committedByPartition(topic, groupId))[1 - taken]).toBe(1),
        20_000,
      );
      expect((await committedByPartition(topic, groupId))[taken]).toBe(3);
    } finally {
      release();
      await two.stop();
      await one.stop();
    }
  });
});
