import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Admin, createKafka, type Message } from '../../libs/kafka/index.js';
import { createLogger, type Logger } from '../../libs/log/index.js';
import { sinkEventsWritten, sinkLagMessages, sinkLagSeconds } from '../../libs/observability/index.js';
import { encodeVoidMessages } from '../../libs/usage/domain/event.js';
import {
  encodeLogMessages,
  KafkaSinkRunner,
  PostgresUsageSink,
  type UsageEventRecord,
  type UsageSink,
} from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { eventually } from './support.js';

/**
 * The sink runner's commit order on the Kafka test broker: a partition's offsets are committed only
 * once what was read up to them is written (events first, then the voids that follow them), and
 * every message read is committed in the end, even one that held nothing to write. Each test has a
 * topic and a consumer group of its own.
 */
const ORG = 7;
let database: TestDatabase;
let postgres: PostgresUsageSink;
let admin: Admin;
const kafka = () => createKafka({ brokers: testServices().kafkaBrokers, clientId: 'sink-commit-order' });

beforeAll(async () => {
  database = await createTestDatabase('sink_commit_order');
  postgres = new PostgresUsageSink(database.db);
  admin = kafka().admin();
  await admin.connect();
});
afterAll(async () => {
  await admin?.disconnect();
  await database?.drop();
});

function usageEvent(item: number, quantity: string): UsageEventRecord {
  return {
    id: randomUUID(),
    orgId: ORG,
    subscriptionItemId: item,
    idempotencyKey: uniqueName('commit-order'),
    quantity,
    occurredAtMs: Date.UTC(2026, 9, 15, 12),
    recordedAtMs: Date.UTC(2026, 9, 15, 12, 0, 1),
  };
}

/** The messages in one produce call, all on partition 0 (so read in this order). */
async function produce(topic: string, messages: Message[]): Promise<void> {
  const producer = kafka().producer();
  await producer.connect();
  try {
    await producer.send({
      topic,
      acks: -1,
      messages: messages.map((m) => ({ ...m, key: null, partition: 0 })),
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

function runner(
  topic: string,
  sink: UsageSink,
  options: { batchSize?: number; flushMs?: number; log?: Logger } = {},
) {
  const log = options.log ?? runLogger('sink-commit-order');
  return new KafkaSinkRunner({
    kafka: createKafka(
      { brokers: testServices().kafkaBrokers, clientId: 'sink-commit-order' },
      log,
      'patient',
    ),
    topic,
    groupId: `${topic}-group`,
    sink,
    batchSize: options.batchSize ?? 100,
    flushMs: options.flushMs ?? 50,
    log,
  });
}

/** Postgres under a name of its own (the lag gauges are labelled by sink name). */
function named(name: string, over: Partial<UsageSink> = {}): UsageSink {
  return {
    name,
    write: (events) => postgres.write(events),
    writeVoids: (voids) => postgres.writeVoids(voids),
    ...over,
  };
}

async function stored(item: number): Promise<{ quantity: string; voided: boolean }[]> {
  const { rows } = await database.db.query<{ quantity: string; voided: boolean }>(
    `SELECT quantity::text AS quantity, voided_at IS NOT NULL AS voided FROM usage_events
      WHERE org_id = $1 AND subscription_item_id = $2 ORDER BY quantity`,
    [ORG, item],
  );
  return rows;
}

async function dailyTotal(item: number): Promise<string | undefined> {
  const { rows } = await database.db.query<{ quantity: string }>(
    'SELECT quantity::text AS quantity FROM usage_daily_totals WHERE org_id = $1 AND subscription_item_id = $2',
    [ORG, item],
  );
  return rows[0]?.quantity;
}

describe('the sink runner commits only what it wrote, and everything it read', () => {
  it('commits past a message that held nothing to write, with no later event to carry the commit', async () => {
    const topic = uniqueName('commit_order_malformed');
    await produce(topic, encodeLogMessages([usageEvent(1, '1')]));
    const sinkRunner = runner(topic, named(uniqueName('malformed-sink')));
    await sinkRunner.start();
    try {
      await eventually(async () => expect(await committed(topic, `${topic}-group`)).toBe(1), 10_000);
      // read in a batch of its own: nothing buffered to write, only an offset to commit
      await produce(topic, [{ value: Buffer.from('not a usage message') }]);
      // a billing run waits for the group to reach the log's end: a skipped last message must not hold it
      await eventually(async () => expect(await committed(topic, `${topic}-group`)).toBe(2), 10_000);
    } finally {
      await sinkRunner.stop();
    }
    expect(await stored(1)).toEqual([{ quantity: '1.00000000', voided: false }]);
  });

  it('writes a void after its event when one batch reads both, then commits both', async () => {
    const topic = uniqueName('commit_order_void');
    const kept = usageEvent(2, '3');
    const voided = usageEvent(2, '5');
    await produce(topic, [
      ...encodeLogMessages([kept, voided]),
      ...encodeVoidMessages([{ event: voided, voidedAtMs: Date.UTC(2026, 9, 16) }]),
    ]);
    const sinkRunner = runner(topic, named(uniqueName('void-sink')));
    await sinkRunner.start();
    try {
      await eventually(async () => expect(await committed(topic, `${topic}-group`)).toBe(2), 10_000);
    } finally {
      await sinkRunner.stop();
    }
    expect(await stored(2)).toEqual([
      { quantity: '3.00000000', voided: false },
      { quantity: '5.00000000', voided: true },
    ]);
    expect(await dailyTotal(2)).toBe('3.00000000');
    const { rows } = await database.db.query<{ voided_at: Date }>(
      'SELECT voided_at FROM usage_events WHERE org_id = $1 AND id = $2',
      [ORG, voided.id],
    );
    // voided when the void says, not when the sink wrote it
    expect(rows).toEqual([{ voided_at: new Date(Date.UTC(2026, 9, 16)) }]);
  });

  it('reads each message of a batch once, and commits past the last of them', async () => {
    const topic = uniqueName('commit_order_read_once');
    // three messages of one event each, in one produce call: one batch
    await produce(
      topic,
      [1, 2, 3].flatMap((n) => encodeLogMessages([usageEvent(10, String(n))])),
    );
    const name = uniqueName('read-once-sink');
    const sinkRunner = runner(topic, named(name));
    await sinkRunner.start();
    try {
      await eventually(async () => expect(await committed(topic, `${topic}-group`)).toBe(3), 10_000);
    } finally {
      await sinkRunner.stop();
    }
    expect(await stored(10)).toHaveLength(3);
    // no message fetched again: three events written, not one more
    const written = (await sinkEventsWritten.get()).values.find((value) => value.labels.sink === name);
    expect(written?.value).toBe(3);
  });

  it('writes and commits a batch of voids alone on its flush timer', async () => {
    const topic = uniqueName('commit_order_voids_alone');
    const event = usageEvent(3, '4');
    await postgres.write([event]);
    await produce(topic, encodeVoidMessages([{ event, voidedAtMs: Date.UTC(2026, 9, 16) }]));
    const sinkRunner = runner(topic, named(uniqueName('voids-alone-sink')));
    await sinkRunner.start();
    try {
      await eventually(async () => expect(await committed(topic, `${topic}-group`)).toBe(1), 10_000);
    } finally {
      await sinkRunner.stop();
    }
    expect(await stored(3)).toEqual([{ quantity: '4.00000000', voided: true }]);
    expect(await dailyTotal(3)).toBe('0.00000000');
  });

  it('commits nothing while its voids fail to write, and commits once they are written', async () => {
    const topic = uniqueName('commit_order_void_fails');
    const event = usageEvent(4, '6');
    await produce(topic, [
      ...encodeLogMessages([event]),
      ...encodeVoidMessages([{ event, voidedAtMs: Date.UTC(2026, 9, 16) }]),
    ]);
    let attempts = 0;
    let failing = true;
    const sink = named(uniqueName('void-fails-sink'), {
      writeVoids: async (voids) => {
        attempts++;
        if (failing) throw new Error('the store is down');
        await postgres.writeVoids(voids);
      },
    });
    const sinkRunner = runner(topic, sink);
    await sinkRunner.start();
    try {
      // retried (100 ms, then 200 ms later): each attempt came after the one before failed
      await eventually(async () => expect(attempts).toBeGreaterThanOrEqual(3), 10_000);
      expect(await committed(topic, `${topic}-group`)).toBe(0);
      failing = false;
      await eventually(async () => expect(await committed(topic, `${topic}-group`)).toBe(2), 10_000);
    } finally {
      failing = false;
      await sinkRunner.stop();
    }
    expect(await stored(4)).toEqual([{ quantity: '6.00000000', voided: true }]);
  });

  it('writes a batch as soon as it holds exactly batchSize events, without its flush timer', async () => {
    const topic = uniqueName('commit_order_batch_size');
    const events = Array.from({ length: 5 }, () => usageEvent(5, '1'));
    // one message of five events: a batch of exactly batchSize
    const messages = encodeLogMessages(events);
    expect(messages).toHaveLength(1);
    await produce(topic, messages);
    // a timer of a minute: only the count can start the write within the test
    const name = uniqueName('batch-size-sink');
    const sinkRunner = runner(topic, named(name), { batchSize: 5, flushMs: 60_000 });
    await sinkRunner.start();
    try {
      await eventually(async () => {
        expect(await stored(5)).toHaveLength(5);
        expect(await committed(topic, `${topic}-group`)).toBe(1);
      }, 10_000);
      const written = (await sinkEventsWritten.get()).values.find((value) => value.labels.sink === name);
      expect(written?.value).toBe(5);
    } finally {
      await sinkRunner.stop();
    }
  });

  it('writes and commits what it holds when stopped before its flush timer', async () => {
    const topic = uniqueName('commit_order_stop');
    await produce(topic, encodeLogMessages([usageEvent(6, '2'), usageEvent(6, '3')]));
    const name = uniqueName('stop-sink');
    const sinkRunner = runner(topic, named(name), { flushMs: 60_000 });
    await sinkRunner.start();
    try {
      // read and held: the lag gauge counts the message as read and not committed
      await eventually(async () => {
        const lag = (await sinkLagMessages.get()).values.find((value) => value.labels.sink === name);
        expect(lag?.value).toBe(1);
      }, 10_000);
      expect(await stored(6)).toEqual([]);
    } finally {
      await sinkRunner.stop();
    }
    expect(await stored(6)).toHaveLength(2);
    expect(await committed(topic, `${topic}-group`)).toBe(1);
  });

  it('writes what it holds once the oldest of it has waited flushMs, though messages keep coming', async () => {
    const topic = uniqueName('commit_order_stream');
    const group = `${topic}-group`;
    const producer = kafka().producer();
    await producer.connect();
    const send = (quantity: string) =>
      producer.send({
        topic,
        acks: -1,
        messages: [{ ...encodeLogMessages([usageEvent(7, quantity)])[0]!, partition: 0 }],
      });
    const sinkRunner = runner(topic, named(uniqueName('stream-sink')), { flushMs: 1000 });
    try {
      await send('1');
      await sinkRunner.start();
      // joined and flushed once: from here on the stream is read as it comes
      await eventually(async () => expect(await committed(topic, group)).toBe(1), 10_000);
      const streamStarted = Date.now();
      let sent = 1;
      // a message every 100 ms, fewer than batchSize in all: only the timer can write them
      while ((await committed(topic, group)) === 1 && Date.now() - streamStarted < 5000) {
        await send('1');
        sent++;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // written and committed about flushMs after the stream's first message, while it still ran
      expect(await committed(topic, group)).toBeGreaterThan(1);
      expect(Date.now() - streamStarted).toBeLessThan(5000);
      expect(sent).toBeLessThan(100);
    } finally {
      await sinkRunner.stop();
      await producer.disconnect();
    }
  });

  it('reports the age of the oldest event it holds unwritten, whichever order they were read in', async () => {
    const topic = uniqueName('commit_order_oldest');
    const now = Date.now();
    const event = (ageMs: number) => ({ ...usageEvent(8, '1'), recordedAtMs: now - ageMs });
    // one message: the oldest event first, then younger ones
    await produce(topic, encodeLogMessages([event(120_000), event(10_000), event(30_000)]));
    let failing = true;
    let attempts = 0;
    const name = uniqueName('oldest-sink');
    const sink = named(name, {
      write: async (events) => {
        attempts++;
        if (failing) throw new Error('the store is down');
        await postgres.write(events);
      },
    });
    const lagSeconds = async () =>
      (await sinkLagSeconds.get()).values.find((value) => value.labels.sink === name)?.value;
    const sinkRunner = runner(topic, sink);
    await sinkRunner.start();
    try {
      // while the write is retried, not only while the events wait in the buffer
      await eventually(async () => expect(attempts).toBeGreaterThanOrEqual(2), 10_000);
      expect(await lagSeconds()).toBeGreaterThanOrEqual(120);
      expect(await lagSeconds()).toBeLessThan(180);
      failing = false;
      await eventually(async () => expect(await lagSeconds()).toBe(0), 10_000);
    } finally {
      failing = false;
      await sinkRunner.stop();
    }
    expect(await stored(8)).toHaveLength(3);
  });

  it('shows its lag growing while its writes keep failing, not frozen at the outage start', async () => {
    const topic = uniqueName('commit_order_outage');
    let failing = false;
    let attempts = 0;
    const name = uniqueName('outage-sink');
    const sink = named(name, {
      write: async (events) => {
        if (!failing) return postgres.write(events);
        attempts++;
        throw new Error('the store is down');
      },
    });
    const gauge = async (metric: typeof sinkLagSeconds) =>
      (await metric.get()).values.find((value) => value.labels.sink === name)?.value;
    const sinkRunner = runner(topic, sink);
    await produce(topic, encodeLogMessages([usageEvent(9, '1')]));
    await sinkRunner.start();
    try {
      // joined and caught up: the next event is read as soon as it is produced
      await eventually(async () => expect(await committed(topic, `${topic}-group`)).toBe(1), 10_000);
      failing = true;
      await produce(topic, encodeLogMessages([{ ...usageEvent(9, '2'), recordedAtMs: Date.now() }]));
      // four attempts span 1.4 s of retries (200, 400, 800 ms apart): the event was read before them
      await eventually(async () => {
        expect(attempts).toBeGreaterThanOrEqual(4);
        expect(await gauge(sinkLagSeconds)).toBeGreaterThanOrEqual(1);
        expect(await gauge(sinkLagMessages)).toBe(1);
      }, 10_000);
      failing = false;
      await eventually(async () => expect(await gauge(sinkLagSeconds)).toBe(0), 10_000);
    } finally {
      failing = false;
      await sinkRunner.stop();
    }
  });

  it("starts a new batch's flush timer at its first message, not at the previous batch's", async () => {
    const topic = uniqueName('commit_order_timer');
    const group = `${topic}-group`;
    const name = uniqueName('timer-sink');
    // a full batch first (written on the count), then one event alone
    await produce(topic, encodeLogMessages(Array.from({ length: 5 }, () => usageEvent(11, '1'))));
    const sinkRunner = runner(topic, named(name), { batchSize: 5, flushMs: 1000 });
    await sinkRunner.start();
    try {
      await eventually(async () => expect(await committed(topic, group)).toBe(1), 10_000);
      // longer than flushMs after the first batch was read
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await produce(topic, encodeLogMessages([usageEvent(11, '2')]));
      const lag = async () =>
        (await sinkLagMessages.get()).values.find((value) => value.labels.sink === name)?.value;
      await eventually(async () => expect(await lag()).toBe(1), 5000);
      const read = Date.now();
      // read, and held for its own flushMs: not written at the next tick of the flush loop
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await stored(11)).toHaveLength(5);
      await eventually(async () => expect(await committed(topic, group)).toBe(2), 5000);
      expect(Date.now() - read).toBeGreaterThanOrEqual(500);
    } finally {
      await sinkRunner.stop();
    }
    expect(await stored(11)).toHaveLength(6);
  });

  it('counts in its lag every message read and unwritten, across fetches, from where it started', async () => {
    const topic = uniqueName('commit_order_lag_fetches');
    const name = uniqueName('lag-fetches-sink');
    const lag = async () =>
      (await sinkLagMessages.get()).values.find((value) => value.labels.sink === name)?.value;
    await produce(topic, encodeLogMessages([usageEvent(12, '1')]));
    // held until stopped: neither fetch is written or committed meanwhile
    const sinkRunner = runner(topic, named(name), { flushMs: 60_000 });
    await sinkRunner.start();
    try {
      await eventually(async () => expect(await lag()).toBe(1), 10_000);
      // a second fetch: the lag counts from the group's commit (0), not from this fetch's first offset
      await produce(topic, encodeLogMessages([usageEvent(12, '2')]));
      await eventually(async () => expect(await lag()).toBe(2), 10_000);
    } finally {
      await sinkRunner.stop();
    }
    expect(await committed(topic, `${topic}-group`)).toBe(2);
    expect(await lag()).toBe(0);
  });

  it('reports no negative age for an event recorded ahead of its clock (another host)', async () => {
    const topic = uniqueName('commit_order_future');
    const name = uniqueName('future-sink');
    const gauge = async (metric: typeof sinkLagSeconds) =>
      (await metric.get()).values.find((value) => value.labels.sink === name)?.value;
    await produce(topic, encodeLogMessages([{ ...usageEvent(13, '1'), recordedAtMs: Date.now() + 600_000 }]));
    const sinkRunner = runner(topic, named(name), { flushMs: 60_000 });
    await sinkRunner.start();
    try {
      // read and held, so its age counts
      await eventually(async () => expect(await gauge(sinkLagMessages)).toBe(1), 10_000);
      expect(await gauge(sinkLagSeconds)).toBe(0);
    } finally {
      await sinkRunner.stop();
    }
  });

  it('writes nothing when stopped with nothing read since its last write', async () => {
    const topic = uniqueName('commit_order_idle_stop');
    await produce(topic, encodeLogMessages([usageEvent(14, '1'), usageEvent(14, '2')]));
    const writes: number[] = [];
    const sink = named(uniqueName('idle-stop-sink'), {
      write: async (events) => {
        writes.push(events.length);
        await postgres.write(events);
      },
    });
    const lines: { msg: string }[] = [];
    const log = createLogger({
      level: 'info',
      service: 'sink-commit-order',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    const sinkRunner = runner(topic, sink, { log });
    await sinkRunner.start();
    try {
      await eventually(async () => expect(await committed(topic, `${topic}-group`)).toBe(1), 10_000);
    } finally {
      await sinkRunner.stop();
    }
    // the one write of the message: no empty write at stop
    expect(writes).toEqual([2]);
    // nor any line about its writes: none failed, so none "writes again"
    expect(lines.filter((line) => line.msg.startsWith('usage sink'))).toEqual([]);
  });

  it('reads no further while a full batch is being written, and reads on once it is', async () => {
    const topic = uniqueName('commit_order_back_pressure');
    const group = `${topic}-group`;
    const name = uniqueName('back-pressure-sink');
    const lag = async () =>
      (await sinkLagMessages.get()).values.find((value) => value.labels.sink === name)?.value;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const writes: number[] = [];
    // its first write holds until released
    const sink = named(name, {
      write: async (events) => {
        writes.push(events.length);
        if (writes.length === 1) await released;
        await postgres.write(events);
      },
    });
    await produce(topic, encodeLogMessages([usageEvent(15, '1')]));
    // every message is a full batch; only the count starts a write
    const sinkRunner = runner(topic, sink, { batchSize: 1, flushMs: 60_000 });
    await sinkRunner.start();
    try {
      await eventually(async () => expect(writes).toEqual([1]), 10_000);
      await produce(topic, encodeLogMessages([usageEvent(15, '2')]));
      // several fetches' time (each waits at most 500 ms): the second message is not read meanwhile
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(await lag()).toBe(1);
      expect(writes).toEqual([1]);
      release();
      await eventually(async () => expect(await committed(topic, group)).toBe(2), 10_000);
      expect(writes).toEqual([1, 1]);
    } finally {
      release();
      await sinkRunner.stop();
    }
    expect(await stored(15)).toHaveLength(2);
  });
});
