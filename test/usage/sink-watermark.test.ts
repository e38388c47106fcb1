import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getCreditBalance } from '../../libs/billing/index.js';
import { type Admin, type Consumer, createKafka, type Kafka } from '../../libs/kafka/index.js';
import {
  InProcessUsageEventLog,
  openUsageReadStores,
  PostgresUsageSink,
  SinkWatermarkRecorder,
  sinkWatermark,
} from '../../libs/usage/index.js';
import { basicCatalog, customerIn, subscribe } from '../billing/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { type KafkaTestBroker, startKafkaTestBroker } from '../helpers/kafka-test-broker.js';
import { runLogger } from '../helpers/run-log.js';
import { uniqueName } from '../helpers/services.js';

/**
 * `as_of` of the read-back is the sink's watermark: the instant up to which it holds every event
 * answered 201, so the oldest partition's, never the newest's. Offsets are set by hand on a real
 * topic of two partitions, one of them behind: the plausible bugs are taking the newest partition
 * (max instead of min), and a partition that never caught up missing from the minimum.
 */
let database: TestDatabase;
let broker: KafkaTestBroker;
let kafka: Kafka;
let admin: Admin;
/** A member of the sink's consumer group that never commits by itself: the test commits for it. */
let consumer: Consumer;
const topic = uniqueName('watermark');
const groupId = `${topic}-pg-sink`;
const SINK = 'pg-sink';

beforeAll(async () => {
  database = await createTestDatabase('watermark');
  broker = await startKafkaTestBroker();
  await broker.createTopic(topic, 2);
  kafka = createKafka({ brokers: broker.brokers, clientId: 'watermark-test' });
  admin = kafka.admin();
  await admin.connect();
  consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
  await consumer.run({ autoCommit: false, eachMessage: async () => {} });
  await joined;
});
afterAll(async () => {
  await consumer?.disconnect();
  await admin?.disconnect();
  await broker?.stop();
  await database?.drop();
});

async function produce(partition: number, count: number): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic,
    messages: Array.from({ length: count }, (_, i) => ({ partition, value: `m${i}` })),
  });
  await producer.disconnect();
}

/** The sink's consumer group commits `offsets` (partition -> offset), as a sink does after writing. */
const commit = (offsets: Record<number, number>) =>
  consumer.commitOffsets(
    Object.entries(offsets).map(([partition, offset]) => ({
      topic,
      partition: Number(partition),
      offset: String(offset),
    })),
  );

/** This file's recorder; `admin` and `intervalMs` may be a test's own. */
const recorder = (options: { admin?: Admin; intervalMs?: number } = {}) =>
  new SinkWatermarkRecorder({
    admin: options.admin ?? admin,
    db: database.db,
    topic,
    groupId,
    sink: SINK,
    intervalMs: options.intervalMs ?? 1000,
    log: runLogger(),
  });

/** One reading, and the instants it happened between. */
async function reading(): Promise<{ before: number; after: number }> {
  const before = Date.now();
  await recorder().recordOnce();
  return { before, after: Date.now() };
}

/** The test's admin client, but the log's ends are read through `fetchTopicOffsets`. */
const adminReadingEnds = (
  fetchTopicOffsets: (topic: string) => ReturnType<Admin['fetchTopicOffsets']>,
): Admin =>
  new Proxy(admin, {
    get(target, property) {
      if (property === 'fetchTopicOffsets') return fetchTopicOffsets;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });

const asOf = async () => (await sinkWatermark(database.db, SINK, topic))?.getTime() ?? null;

describe('the sink watermark (as_of)', () => {
  it('is the oldest partition, not the newest, when one partition is behind', async () => {
    await produce(0, 3);
    await produce(1, 2);

    // partition 0 written, partition 1 never caught up: nothing can be vouched for yet
    await commit({ 0: 3, 1: 0 });
    await reading();
    expect(await asOf()).toBe(0);

    // both caught up at one reading
    await commit({ 0: 3, 1: 2 });
    const both = await reading();
    const caughtUp = (await asOf())!;
    expect(caughtUp).toBeGreaterThanOrEqual(both.before);
    expect(caughtUp).toBeLessThanOrEqual(both.after);

    // partition 0 falls behind (a new event not yet written) while partition 1 stays covered
    await produce(0, 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const later = await reading();
    const { rows } = await database.db.query<{ log_partition: number; covered_until: Date }>(
      'SELECT log_partition, covered_until FROM usage_sink_watermarks WHERE topic = $1 ORDER BY log_partition',
      [topic],
    );
    expect(rows[1]!.covered_until.getTime()).toBeGreaterThanOrEqual(later.before);
    expect(rows[0]!.covered_until.getTime()).toBe(caughtUp);
    expect(await asOf()).toBe(caughtUp);

    // written: the oldest moves on
    await commit({ 0: 4, 1: 2 });
    const done = await reading();
    expect(await asOf()).toBeGreaterThanOrEqual(done.before);
  });

  it('vouches for an empty partition, and for none whose offset the group never committed', async () => {
    // a topic of its own, of three partitions: 0 and 1 get messages, 2 never does
    const own = uniqueName('watermark-empty');
    const ownGroup = `${own}-pg-sink`;
    await broker.createTopic(own, 3);
    const member = kafka.consumer({ groupId: ownGroup });
    await member.connect();
    try {
      await member.subscribe({ topic: own, fromBeginning: true });
      const joined = new Promise<void>((resolve) => member.on(member.events.GROUP_JOIN, () => resolve()));
      await member.run({ autoCommit: false, eachMessage: async () => {} });
      await joined;
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({
        topic: own,
        messages: [
          { partition: 0, value: 'a' },
          { partition: 1, value: 'b' },
          { partition: 1, value: 'c' },
        ],
      });
      await producer.disconnect();
      const read = async () => {
        const before = Date.now();
        await new SinkWatermarkRecorder({
          admin,
          db: database.db,
          topic: own,
          groupId: ownGroup,
          sink: SINK,
          intervalMs: 1000,
          log: runLogger(),
        }).recordOnce();
        return before;
      };
      const ownAsOf = async () => (await sinkWatermark(database.db, SINK, own))?.getTime() ?? null;
      const commitOwn = (offsets: Record<number, number>) =>
        member.commitOffsets(
          Object.entries(offsets).map(([partition, offset]) => ({
            topic: own,
            partition: Number(partition),
            offset: String(offset),
          })),
        );

      const rows = async () =>
        (
          await database.db.query<{ p: number; offset: string; until: Date }>(
            `SELECT log_partition AS p, committed_offset::text AS offset, covered_until AS until
               FROM usage_sink_watermarks WHERE sink = $1 AND topic = $2 ORDER BY log_partition`,
            [SINK, own],
          )
        ).rows.map(({ p, offset, until }) => ({ p, offset, until: until.getTime() }));

      // partition 1 has never been committed: its events are not written, as_of vouches for nothing
      await commitOwn({ 0: 1 });
      await read();
      expect(await ownAsOf()).toBe(0);
      // a covered partition records the log's end (the empty one too, though never committed)
      expect((await rows()).map(({ p, offset }) => ({ p, offset }))).toEqual([
        { p: 0, offset: '1' },
        { p: 1, offset: '-1' },
        { p: 2, offset: '0' },
      ]);

      // every partition with messages written: the empty one holds nothing to wait for
      await commitOwn({ 0: 1, 1: 2 });
      const before = await read();
      expect(await ownAsOf()).toBeGreaterThanOrEqual(before);

      // the group moved back on partition 1 (offsets reset to read again): its row does not
      const kept = await rows();
      expect(kept[1]).toMatchObject({ offset: '2' });
      await commitOwn({ 1: 1 });
      await read();
      expect((await rows())[1]).toEqual(kept[1]);
    } finally {
      await member.disconnect();
    }
  });
  it("is the read-back's as_of: the pg-sink's own, and the epoch before it recorded anything", async () => {
    const readStores = (usageTopic: string) =>
      openUsageReadStores(
        {
          KAFKA_BROKERS: broker.brokers,
          KAFKA_CLIENT_ID: 'watermark-test',
          KAFKA_USAGE_TOPIC: usageTopic,
          KAFKA_CONSUMER_GROUP_PREFIX: `${usageTopic}-`,
          CLICKHOUSE_URL: undefined,
          CLICKHOUSE_DATABASE: 'billing',
        },
        database.db,
        new InProcessUsageEventLog(new PostgresUsageSink(database.db), [], { lingerMs: 0 }),
      );
    // the first test left pg-sink rows for `topic`
    const recorded = readStores(topic);
    expect((await recorded.asOf()).getTime()).toBe(await asOf());
    // a topic the pg-sink never recorded: as_of vouches for nothing, though the ch-sink caught up
    const fresh = uniqueName('watermark-fresh');
    await database.db.query(
      `INSERT INTO usage_sink_watermarks (sink, topic, log_partition, committed_offset, covered_until)
       VALUES ('ch-sink', $1, 0, 5, now())`,
      [fresh],
    );
    const never = readStores(fresh);
    expect((await never.asOf()).getTime()).toBe(0);
    await recorded.close();
    await never.close();
  });

  it("is the credit balance's as_of too: the oldest of its previews', never the read's instant", async () => {
    const { orgId } = await createTestOrg(database.db);
    const { seats, apiCalls } = await basicCatalog(database.db, orgId);
    const customerId = await customerIn(database.db, orgId);
    const start = new Date(Date.now() - 86_400_000);
    for (const product of [seats, apiCalls])
      await subscribe(
        database.db,
        orgId,
        { customer_id: customerId, items: [{ product_id: product }], start_date: start },
        start,
      );
    // a topic the pg-sink never recorded: the previews vouch for nothing, so neither does the balance
    const stores = openUsageReadStores(
      {
        KAFKA_BROKERS: broker.brokers,
        KAFKA_CLIENT_ID: 'watermark-test',
        KAFKA_USAGE_TOPIC: uniqueName('watermark-balance'),
        KAFKA_CONSUMER_GROUP_PREFIX: 'balance-',
        CLICKHOUSE_URL: undefined,
        CLICKHOUSE_DATABASE: 'billing',
      },
      database.db,
      new InProcessUsageEventLog(new PostgresUsageSink(database.db), [], { lingerMs: 0 }),
    );
    try {
      const balance = await getCreditBalance(database.db, stores, orgId, customerId);
      expect(Number(balance.pending)).toBeGreaterThan(0);
      expect(balance.as_of).toBe(new Date(0).toISOString());
      // each preview reads the watermark on its own: when it moved between them, the balance
      // vouches only for the oldest reading
      const oldest = Date.now() - 60_000;
      const readings = [oldest + 59_000, oldest];
      const moving = { ...stores, asOf: async () => new Date(readings.shift() ?? 0) };
      const lagging = await getCreditBalance(database.db, moving, orgId, customerId);
      expect(readings).toEqual([]);
      expect(lagging.as_of).toBe(new Date(oldest).toISOString());
    } finally {
      await stores.close();
    }
  });
  it('reads its instant before the log ends: an event acknowledged after the ends were read is not vouched for', async () => {
    const ends = await admin.fetchTopicOffsets(topic);
    await commit(Object.fromEntries(ends.map((end) => [end.partition, Number(end.high)])));
    let acknowledgedAt = 0;
    // between the reading of the ends and the rest of the reading, an event is acknowledged
    const racing = adminReadingEnds(async (name) => {
      const read = await admin.fetchTopicOffsets(name);
      await produce(0, 1);
      acknowledgedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 5));
      return read;
    });
    await recorder({ admin: racing }).recordOnce();
    expect(acknowledgedAt).toBeGreaterThan(0);
    expect(await asOf()).toBeLessThan(acknowledgedAt);
  });

  it('reads no more once stopped, though a reading was running when stop() was called', async () => {
    let readings = 0;
    const counting = adminReadingEnds((name) => {
      readings++;
      return admin.fetchTopicOffsets(name);
    });
    const running = recorder({ admin: counting, intervalMs: 20 });
    running.start();
    expect(readings).toBe(1);
    await running.stop();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(readings).toBe(1);
  });

  it('returns from stop() only once the reading under way has recorded its rows', async () => {
    const ends = await admin.fetchTopicOffsets(topic);
    await commit(Object.fromEntries(ends.map((end) => [end.partition, Number(end.high)])));
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reading = false;
    // the reading holds after the log's ends until released
    const holding = adminReadingEnds(async (name) => {
      const read = await admin.fetchTopicOffsets(name);
      reading = true;
      await held;
      return read;
    });
    const running = recorder({ admin: holding, intervalMs: 60_000 });
    const started = Date.now();
    running.start();
    await vi.waitFor(() => expect(reading).toBe(true), { timeout: 5000, interval: 10 });
    const stopped = running.stop();
    release();
    await stopped;
    // a caller closing the database after stop() must not cut the reading short
    expect(await asOf()).toBeGreaterThanOrEqual(started);
  });

  it('reads again every interval once started, a reading that failed included', async () => {
    const ends = await admin.fetchTopicOffsets(topic);
    await commit(Object.fromEntries(ends.map((end) => [end.partition, Number(end.high)])));
    let readings = 0;
    let failures = 0;
    const counting = adminReadingEnds((name) => {
      readings++;
      return admin.fetchTopicOffsets(name).catch((error: unknown) => {
        failures++;
        throw error;
      });
    });
    // the first reading's request for the log's ends is refused (ListOffsets, not authorized)
    await broker.injectErrors(2, 29, 1);
    const running = recorder({ admin: counting, intervalMs: 20 });
    const started = Date.now();
    running.start();
    try {
      await vi.waitFor(
        async () => {
          expect(readings).toBeGreaterThanOrEqual(3);
          expect(await asOf()).toBeGreaterThanOrEqual(started);
        },
        { timeout: 5000, interval: 20 },
      );
    } finally {
      await running.stop();
    }
    expect(failures).toBe(1);
  });
});
