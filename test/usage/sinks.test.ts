import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClickHouse, openClickHouse } from '../../libs/clickhouse/index.js';
import { type Admin, createKafka, type Message } from '../../libs/kafka/index.js';
import { createLogger } from '../../libs/log/index.js';
import { sinkLagMessages, sinkLagSeconds } from '../../libs/observability/index.js';
import { VERSION_CEILING_MS, VOID_VERSION } from '../../libs/usage/aggregation/clickhouse-schema.js';
import {
  ClickHouseUsageAggregator,
  ClickHouseUsageSink,
  encodeLogMessages,
  KafkaSinkRunner,
  migrateClickHouse,
  PostgresDailyTotalsAggregator,
  PostgresUsageAggregator,
  PostgresUsageSink,
  type UsageEventRecord,
  type UsageSink,
} from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { assignmentListener, eventually } from './support.js';

const ORG = 1;
const ITEM = 10;
const OTHER_ITEM = 11;

function usageEvent(
  key: string,
  quantity: string,
  overrides: Partial<UsageEventRecord> = {},
): UsageEventRecord {
  return {
    id: randomUUID(),
    orgId: ORG,
    subscriptionItemId: ITEM,
    idempotencyKey: key,
    quantity,
    occurredAtMs: Date.UTC(2026, 9, 15, 12, 0, 0, 123),
    recordedAtMs: Date.UTC(2026, 9, 15, 12, 0, 1),
    ...overrides,
  };
}

/** Each list of messages in one produce call, acknowledged by every replica. */
async function produce(topic: string, ...sends: Message[][]): Promise<void> {
  const producer = createKafka({ brokers: testServices().kafkaBrokers, clientId: 'sinks-test' }).producer();
  await producer.connect();
  try {
    for (const messages of sends) await producer.send({ topic, acks: -1, messages });
  } finally {
    await producer.disconnect();
  }
}

function sinkRunner(
  topic: string,
  groupId: string,
  sink: UsageSink,
  log = runLogger('sinks'),
  flushMs = 50,
  admin?: Admin,
): KafkaSinkRunner {
  return new KafkaSinkRunner({
    kafka: createKafka({ brokers: testServices().kafkaBrokers, clientId: 'sinks-test' }, log, 'patient'),
    topic,
    groupId,
    sink,
    batchSize: 100,
    flushMs,
    log,
    ...(admin ? { admin } : {}),
  });
}

/** The offsets consumer group `groupId` committed on `topic`, summed (a partition never committed: 0). */
async function committedOffsets(topic: string, groupId: string): Promise<number> {
  const admin = createKafka({ brokers: testServices().kafkaBrokers, clientId: 'sinks-test' }).admin();
  await admin.connect();
  try {
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return (committed?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
  } finally {
    await admin.disconnect();
  }
}

const OCTOBER = [new Date(Date.UTC(2026, 9, 1)), new Date(Date.UTC(2026, 10, 1))] as const;

/**
 * The two sinks are idempotent: a batch delivered twice (as Kafka redelivers after a crash or a
 * rebalance) leaves no second row in Postgres and no second count in ClickHouse, and both
 * aggregation ports give the same exact decimal for the same events.
 */
describe('usage sinks', () => {
  let database: TestDatabase;
  let clickhouse: ClickHouse;
  let postgresSink: PostgresUsageSink;
  let clickhouseSink: ClickHouseUsageSink;
  let postgresTotals: PostgresUsageAggregator;
  let clickhouseTotals: ClickHouseUsageAggregator;

  beforeAll(async () => {
    database = await createTestDatabase('usage_sinks');
    clickhouse = openClickHouse({ url: testServices().clickhouseUrl, database: uniqueName('usage_sinks') });
    await migrateClickHouse(clickhouse);
    postgresSink = new PostgresUsageSink(database.db);
    clickhouseSink = new ClickHouseUsageSink(clickhouse);
    postgresTotals = new PostgresUsageAggregator(database.db);
    clickhouseTotals = new ClickHouseUsageAggregator(clickhouse);
  });
  afterAll(async () => {
    await clickhouse?.command(`DROP DATABASE IF EXISTS ${clickhouse.database}`);
    await clickhouse?.close();
    await database?.drop();
  });

  const clickhouseRows = async (item: number) => {
    const rows = await clickhouse.rows<{ rows: string; total: string }>(
      `SELECT count() AS rows, toString(sum(quantity)) AS total FROM ${clickhouse.database}.usage_events FINAL
        WHERE org_id = ${ORG} AND subscription_item_id = ${item}`,
    );
    return rows[0];
  };

  it('writes a batch delivered twice once, to each sink', async () => {
    const batch = [
      usageEvent('twice-1', '0.1'),
      usageEvent('twice-2', '0.2'),
      usageEvent('twice-3', '123456789.12345678'),
      usageEvent('twice-4', '0.00000001', { subscriptionItemId: OTHER_ITEM }),
    ];
    for (let delivery = 0; delivery < 2; delivery++) {
      await postgresSink.write(batch);
      await clickhouseSink.write(batch);
    }
    const { rows } = await database.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM usage_events WHERE idempotency_key LIKE 'twice-%'",
    );
    expect(rows).toEqual([{ n: 4 }]);
    expect(await clickhouseRows(ITEM)).toEqual({ rows: '3', total: '123456789.42345678' });
    expect(await clickhouseRows(OTHER_ITEM)).toEqual({ rows: '1', total: '0.00000001' });
  });

  it('keeps the first event of an identity in both stores, as a client retry after a lost ack would', async () => {
    const first = usageEvent('retried', '5', { subscriptionItemId: 12 });
    const retry = usageEvent('retried', '7', {
      subscriptionItemId: 12,
      recordedAtMs: first.recordedAtMs + 2000,
    });
    for (const event of [first, retry]) {
      await postgresSink.write([event]);
      await clickhouseSink.write([event]);
    }
    const { rows } = await database.db.query(
      "SELECT id, quantity::text AS quantity FROM usage_events WHERE idempotency_key = 'retried'",
    );
    expect(rows).toEqual([{ id: first.id, quantity: '5.00000000' }]);
    const [stored] = await clickhouse.rows<{ id: string; quantity: string }>(
      `SELECT toString(id) AS id, toString(quantity) AS quantity FROM ${clickhouse.database}.usage_events FINAL
        WHERE org_id = ${ORG} AND subscription_item_id = 12`,
    );
    expect(stored).toEqual({ id: first.id, quantity: '5.00000000' });
  });

  it('writes every column of an event and of a void to ClickHouse exactly', async () => {
    // quantities past 2^64 once scaled (ClickHouse 18.16 prints Decimal128 of 30 whole digits wrongly)
    const org = 2 ** 40 + 3;
    const events = [
      usageEvent('k', '0.00000001', { orgId: org, subscriptionItemId: 2 ** 33 + 1 }),
      usageEvent('clé-数量-🚀', '99999999999999999999.99999999', {
        orgId: org,
        subscriptionItemId: 5,
        occurredAtMs: Date.UTC(2099, 11, 31, 23, 59, 59, 999),
      }),
      usageEvent('x'.repeat(255), '184467440737.09551616', {
        orgId: org,
        subscriptionItemId: 6,
        occurredAtMs: 0,
        // recorded within a second too: its milliseconds have a column of their own
        recordedAtMs: Date.UTC(2026, 9, 15, 12, 0, 1, 999),
      }),
    ];
    await clickhouseSink.write(events);
    await clickhouseSink.writeVoids([{ event: events[2]!, voidedAtMs: Date.UTC(2026, 10, 2, 3, 4, 5, 600) }]);
    const rows = await clickhouse.rows(
      `SELECT subscription_item_id, idempotency_key, toString(id) AS id, toString(quantity) AS quantity,
              toUnixTimestamp(occurred_at) AS occurred_s, occurred_ms, toUnixTimestamp(recorded_at) AS recorded_s,
              recorded_ms, version, voided, toUnixTimestamp(voided_at) AS voided_s
         FROM ${clickhouse.database}.usage_events WHERE org_id = ${org} ORDER BY subscription_item_id, version`,
    );
    const row = (e: UsageEventRecord, version: number, voided = 0, voidedS = 0) => ({
      subscription_item_id: String(e.subscriptionItemId),
      idempotency_key: e.idempotencyKey,
      id: e.id,
      quantity: e.quantity.includes('.')
        ? e.quantity.padEnd(e.quantity.indexOf('.') + 9, '0')
        : `${e.quantity}.00000000`,
      occurred_s: Math.floor(e.occurredAtMs / 1000),
      occurred_ms: e.occurredAtMs % 1000,
      recorded_s: Math.floor(e.recordedAtMs / 1000),
      recorded_ms: e.recordedAtMs % 1000,
      version: String(version),
      voided,
      voided_s: voidedS,
    });
    const eventVersion = (e: UsageEventRecord) => VERSION_CEILING_MS - e.recordedAtMs;
    expect(rows).toEqual([
      row(events[1]!, eventVersion(events[1]!)),
      row(events[2]!, eventVersion(events[2]!)),
      row(events[2]!, VOID_VERSION, 1, Date.UTC(2026, 10, 2, 3, 4, 5) / 1000),
      row(events[0]!, eventVersion(events[0]!)),
    ]);
  });

  it('keeps the earliest recorded event of an identity whatever order the stores meet them in', async () => {
    // The log no longer keeps an item's events in order: a lost acknowledgement's event (first) may
    // reach a sink after the client's retry (retry), a day later in its timestamp and quantity.
    const item = 20;
    const DAY = 86_400_000;
    const first = usageEvent('late-first', '5', { subscriptionItemId: item });
    const retry = usageEvent('late-first', '7', {
      subscriptionItemId: item,
      occurredAtMs: first.occurredAtMs + DAY,
      recordedAtMs: first.recordedAtMs + 2000,
    });
    // the billed periods of both days, already compared (not dirty): a replacement must mark both
    for (const at of [first.occurredAtMs, retry.occurredAtMs]) {
      const start = new Date(Math.floor(at / DAY) * DAY);
      await database.db.query(
        `INSERT INTO usage_billed_periods (org_id, subscription_id, subscription_item_id, period_start, period_end,
           window_start, window_end, invoice_id, period_quantity, included_units, unit_price, dirty)
         VALUES ($1, 1, $2, $3, $3::timestamptz + interval '1 day', $3, $3::timestamptz + interval '1 day',
           gen_random_uuid(), 0, 0, 0, false)`,
        [ORG, item, start],
      );
    }
    for (const event of [retry, first, retry, first]) {
      await postgresSink.write([event]);
      await clickhouseSink.write([event]);
    }
    const { rows } = await database.db.query(
      `SELECT id, quantity::text AS quantity FROM usage_events WHERE subscription_item_id = ${item}`,
    );
    expect(rows).toEqual([{ id: first.id, quantity: '5.00000000' }]);
    const [stored] = await clickhouse.rows<{ id: string; quantity: string }>(
      `SELECT toString(id) AS id, toString(quantity) AS quantity FROM ${clickhouse.database}.usage_events FINAL
        WHERE org_id = ${ORG} AND subscription_item_id = ${item}`,
    );
    expect(stored).toEqual({ id: first.id, quantity: '5.00000000' });
    // the daily totals moved from the retry's day to the first's, once through the redeliveries
    const { rows: days } = await database.db.query(
      `SELECT day::text AS day, quantity::text AS quantity FROM usage_daily_totals
        WHERE org_id = ${ORG} AND subscription_item_id = ${item} ORDER BY day`,
    );
    expect(days).toEqual([
      { day: '2026-10-15', quantity: '5.00000000' },
      { day: '2026-10-16', quantity: '0.00000000' },
    ]);
    const { rows: periods } = await database.db.query(
      `SELECT dirty FROM usage_billed_periods WHERE org_id = ${ORG} AND subscription_item_id = ${item}`,
    );
    expect(periods).toEqual([{ dirty: true }, { dirty: true }]);

    // both in one batch, the later recorded first: the earlier one is stored, and said to be
    const both = [
      usageEvent('late-batch', '7', { subscriptionItemId: item, recordedAtMs: first.recordedAtMs + 2000 }),
      usageEvent('late-batch', '5', { subscriptionItemId: item }),
    ];
    const { stored: held, inserted } = await postgresSink.writeReturningStored(both);
    expect(inserted.map((e) => e.id)).toEqual([both[1]!.id]);
    expect(held.map((e) => e.id)).toEqual([both[1]!.id, both[1]!.id]);
    const { rows: batch } = await database.db.query(
      `SELECT id FROM usage_events WHERE idempotency_key = 'late-batch'`,
    );
    expect(batch).toEqual([{ id: both[1]!.id }]);
  });

  it('keeps a voided event of an identity voided when an earlier recorded one arrives after it', async () => {
    const item = 21;
    const first = usageEvent('voided-later', '5', { subscriptionItemId: item });
    const retry = usageEvent('voided-later', '7', {
      subscriptionItemId: item,
      recordedAtMs: first.recordedAtMs + 2000,
    });
    const voids = [{ event: retry, voidedAtMs: retry.recordedAtMs + 1000 }];
    await postgresSink.write([retry]);
    await clickhouseSink.write([retry]);
    await postgresSink.writeVoids(voids);
    await clickhouseSink.writeVoids(voids);
    await postgresSink.write([first]);
    await clickhouseSink.write([first]);
    const { rows } = await database.db.query(
      `SELECT id, voided_at IS NOT NULL AS voided FROM usage_events WHERE subscription_item_id = ${item}`,
    );
    expect(rows).toEqual([{ id: retry.id, voided: true }]);
    const { rows: days } = await database.db.query(
      `SELECT quantity::text AS quantity FROM usage_daily_totals WHERE subscription_item_id = ${item}`,
    );
    expect(days).toEqual([{ quantity: '0.00000000' }]);
    const window = [new Date(Date.UTC(2026, 9, 1)), new Date(Date.UTC(2026, 10, 1))] as const;
    expect(await clickhouseTotals.totals(ORG, [item], ...window)).toEqual(
      await postgresTotals.totals(ORG, [item], ...window),
    );
  });

  it('tells the in-process log which event Postgres holds for an identity', async () => {
    const original = usageEvent('stored-1', '3', { subscriptionItemId: 13 });
    await postgresSink.write([original]);
    const fresh = usageEvent('stored-2', '4', { subscriptionItemId: 13 });
    const repeat = usageEvent('stored-1', '9', { subscriptionItemId: 13 });
    const { stored, inserted } = await postgresSink.writeReturningStored([fresh, repeat]);
    expect(inserted.map((e) => e.id)).toEqual([fresh.id]);
    expect(stored[0]).toEqual(fresh);
    expect(stored[1]).toMatchObject({ id: original.id, quantity: '3.00000000', idempotencyKey: 'stored-1' });
    expect(stored[1]!.occurredAtMs).toBe(original.occurredAtMs);
  });

  it('aggregates the same exact decimal from Postgres and ClickHouse over [from, to)', async () => {
    const item = 14;
    const events = [
      usageEvent('a', '0.1', { subscriptionItemId: item, occurredAtMs: OCTOBER[0].getTime() }),
      usageEvent('b', '0.2', { subscriptionItemId: item, occurredAtMs: OCTOBER[1].getTime() - 1 }),
      usageEvent('c', '5', { subscriptionItemId: item, occurredAtMs: OCTOBER[1].getTime() }),
      usageEvent('d', '99999999999.99999999', {
        subscriptionItemId: item,
        occurredAtMs: Date.UTC(2026, 9, 20),
      }),
    ];
    await postgresSink.write(events);
    await clickhouseSink.write(events);
    await clickhouseSink.write(events.slice(0, 2));
    const fromPostgres = await postgresTotals.totals(ORG, [item, 999], ...OCTOBER);
    const fromClickHouse = await clickhouseTotals.totals(ORG, [item, 999], ...OCTOBER);
    expect(Object.fromEntries(fromClickHouse)).toEqual({
      [item]: '100000000000.29999999',
      999: '0.00000000',
    });
    expect(fromClickHouse).toEqual(fromPostgres);
  });

  it("sums only the organization's own events, to the millisecond at both ends, in ClickHouse as in Postgres", async () => {
    const item = 17;
    const at = Date.UTC(2026, 9, 10, 8, 0, 0);
    const events = [
      // in the window's first second, before its first millisecond
      usageEvent('ms-before', '1', { subscriptionItemId: item, occurredAtMs: at + 100 }),
      usageEvent('ms-from', '2', { subscriptionItemId: item, occurredAtMs: at + 500 }),
      // in the window's last second, before its end, and at its end
      usageEvent('ms-last', '4', { subscriptionItemId: item, occurredAtMs: at + 60_499 }),
      usageEvent('ms-to', '8', { subscriptionItemId: item, occurredAtMs: at + 60_500 }),
      // another organization's event on an item of the same id, inside the window
      usageEvent('ms-other-org', '16', {
        orgId: ORG + 1,
        subscriptionItemId: item,
        occurredAtMs: at + 30_000,
      }),
    ];
    await postgresSink.write(events);
    await clickhouseSink.write(events);
    const window = [new Date(at + 500), new Date(at + 60_500)] as const;
    const day = [new Date(Date.UTC(2026, 9, 10)), new Date(Date.UTC(2026, 9, 11))] as const;
    for (const [name, aggregator] of Object.entries({
      clickhouse: clickhouseTotals,
      postgres: postgresTotals,
    })) {
      expect(Object.fromEntries(await aggregator.totals(ORG, [item], ...window)), name).toEqual({
        [item]: '6.00000000',
      });
      expect(await aggregator.daily(ORG, [item], ...day), name).toEqual([
        { date: '2026-10-10', subscription_item_id: item, quantity: '15.00000000' },
      ]);
    }
  });

  it('gives the same daily series from ClickHouse as from Postgres: [from, to) by UTC day, voids left out', async () => {
    const item = 16;
    const day = (d: number, ms = 0) => Date.UTC(2026, 9, d) + ms;
    const voided = usageEvent('daily-voided', '7', {
      subscriptionItemId: item,
      occurredAtMs: day(2, 43_200_000),
    });
    const events = [
      usageEvent('daily-from', '2.5', { subscriptionItemId: item, occurredAtMs: day(1) }),
      usageEvent('daily-last-ms', '1', { subscriptionItemId: item, occurredAtMs: day(3) - 1 }),
      usageEvent('daily-to', '4', { subscriptionItemId: item, occurredAtMs: day(3) }),
      voided,
    ];
    const voids = [{ event: voided, voidedAtMs: Date.now() }];
    await postgresSink.write(events);
    await clickhouseSink.write(events);
    await postgresSink.writeVoids(voids);
    await clickhouseSink.writeVoids(voids);
    const window = [new Date(day(1)), new Date(day(3))] as const;
    const byDate = (rows: { date: string }[]) => [...rows].sort((a, b) => a.date.localeCompare(b.date));
    const fromClickHouse = byDate(await clickhouseTotals.daily(ORG, [item], ...window));
    expect(fromClickHouse).toEqual([
      { date: '2026-10-01', subscription_item_id: item, quantity: '2.50000000' },
      { date: '2026-10-02', subscription_item_id: item, quantity: '1.00000000' },
    ]);
    expect(fromClickHouse).toEqual(byDate(await postgresTotals.daily(ORG, [item], ...window)));
  });

  it('answers windows reaching past when events can happen (derived bounds: year 10000, before 1970) in every store', async () => {
    const item = 15;
    const lastDay = Date.UTC(2099, 11, 31);
    const events = [
      usageEvent('late', '2.5', { subscriptionItemId: item, occurredAtMs: lastDay + 3_600_000 }),
      usageEvent('early', '1', { subscriptionItemId: item, occurredAtMs: 1000 }),
    ];
    await postgresSink.write(events);
    await clickhouseSink.write(events);
    const dayAfter = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000);
    const aggregators = {
      postgres: postgresTotals,
      dailyTotals: new PostgresDailyTotalsAggregator(database.db),
      clickhouse: clickhouseTotals,
    };
    for (const [name, aggregator] of Object.entries(aggregators)) {
      // the day after 9999-12-31: no event can lie there, and no store can hold the bound
      const far = [new Date('9999-12-31T00:00:00Z'), dayAfter('9999-12-31')] as const;
      expect(await aggregator.daily(ORG, [item], ...far), name).toEqual([]);
      expect(Object.fromEntries(await aggregator.totals(ORG, [item], ...far)), name).toEqual({
        [item]: '0.00000000',
      });
      // windows that reach past either end still hold the events inside them
      const straddling = [new Date(lastDay), dayAfter('9999-12-31')] as const;
      expect(await aggregator.daily(ORG, [item], ...straddling), name).toEqual([
        { date: '2099-12-31', subscription_item_id: item, quantity: '2.50000000' },
      ]);
      expect((await aggregator.totals(ORG, [item], ...straddling)).get(item), name).toBe('2.50000000');
      const early = [new Date('0001-01-01T00:00:00Z'), new Date(86_400_000)] as const;
      expect((await aggregator.totals(ORG, [item], ...early)).get(item), name).toBe('1.00000000');
      expect(await aggregator.daily(ORG, [item], ...early), name).toEqual([
        { date: '1970-01-01', subscription_item_id: item, quantity: '1.00000000' },
      ]);
    }
  });

  it.each([
    ['an admin client each', false],
    ['one admin client shared, which a runner that stops leaves connected', true],
  ])(
    'tells its sink whether this member reads the whole log: alone yes, beside a second member no (%s)',
    {
      timeout: 60_000,
    },
    async (_, shareAdmin) => {
      const shared = shareAdmin
        ? createKafka({ brokers: testServices().kafkaBrokers, clientId: 'sinks-test' }).admin()
        : undefined;
      await shared?.connect();
      let sharedDisconnects = 0;
      shared?.on(shared.events.DISCONNECT, () => sharedDisconnects++);
      const topic = uniqueName('usage_assigned');
      const groupId = `${topic}-listener`;
      await produce(topic, encodeLogMessages([usageEvent('a-1', '1')]));
      const first = assignmentListener();
      const one = sinkRunner(topic, groupId, first.sink, undefined, undefined, shared);
      const second = assignmentListener();
      const two = sinkRunner(topic, groupId, second.sink, undefined, undefined, shared);
      try {
        await one.start();
        expect(first.calls[0]).toBe(false); // nothing is assumed before the group assigns
        await eventually(async () => expect(first.calls.at(-1)).toBe(true), 20_000);
        await two.start();
        await eventually(async () => {
          expect(first.calls.at(-1)).toBe(false);
          expect(second.calls.at(-1)).toBe(false);
        }, 30_000);
        await two.stop();
        await eventually(async () => expect(first.calls.at(-1)).toBe(true), 30_000);
        expect(sharedDisconnects).toBe(0);
      } finally {
        await two.stop();
        await one.stop();
        await shared?.disconnect();
      }
    },
  );

  it('writes each message of a topic once even when the topic carries it twice, then commits', async () => {
    const topic = uniqueName('usage_sinks');
    const events = Array.from({ length: 500 }, (_, i) =>
      usageEvent(`topic-${i}`, `${i}.5`, { subscriptionItemId: 20 + (i % 3) }),
    );
    // Windows of 20 events, as many produce calls would write them.
    const messagesOf = (slice: UsageEventRecord[]) => {
      const messages = [];
      for (let at = 0; at < slice.length; at += 20)
        messages.push(...encodeLogMessages(slice.slice(at, at + 20)));
      return messages;
    };
    const messages = messagesOf(events);
    const redelivered = messagesOf(events.slice(0, 250));
    // Delivered twice: the second copy stands for a redelivery after a crash before the commit.
    await produce(topic, messages, redelivered);

    const runners = [postgresSink, clickhouseSink].map((sink) =>
      sinkRunner(topic, `${topic}-${sink.name}`, sink),
    );
    await Promise.all(runners.map((runner) => runner.start()));
    const admin = createKafka({ brokers: testServices().kafkaBrokers, clientId: 'sinks-test' }).admin();
    await admin.connect();
    try {
      // Done when each group committed every offset of the topic (offsets go after the writes).
      const high = (await admin.fetchTopicOffsets(topic)).reduce(
        (sum, partition) => sum + Number(partition.high),
        0,
      );
      expect(high).toBe(messages.length + redelivered.length);
      await eventually(async () => {
        for (const sink of ['pg-sink', 'ch-sink']) {
          const [committed] = await admin.fetchOffsets({ groupId: `${topic}-${sink}`, topics: [topic] });
          const total = committed!.partitions.reduce(
            (sum, partition) => sum + Math.max(0, Number(partition.offset)),
            0,
          );
          expect(total, sink).toBe(high);
        }
      });
    } finally {
      await admin.disconnect();
      await Promise.all(runners.map((runner) => runner.stop()));
    }
    const expectedTotal = `${events.reduce((sum, e) => sum + Number(e.quantity), 0)}.00000000`;
    const { rows } = await database.db.query<{ n: number; total: string }>(
      "SELECT count(*)::int AS n, sum(quantity)::text AS total FROM usage_events WHERE idempotency_key LIKE 'topic-%'",
    );
    expect(rows[0]).toEqual({ n: 500, total: expectedTotal });
    const [row] = await clickhouse.rows<{ rows: string; total: string }>(
      `SELECT count() AS rows, toString(sum(quantity)) AS total FROM ${clickhouse.database}.usage_events FINAL
        WHERE idempotency_key LIKE 'topic-%'`,
    );
    expect(row).toEqual({ rows: '500', total: expectedTotal });
  });

  it('skips a message of an unknown version or cut short, writes the rest and commits past it', async () => {
    const topic = uniqueName('usage_sink_skip');
    const [before, after, cut] = ['skip-before', 'skip-after', 'skip-cut'].map((key) =>
      usageEvent(key, '1', { subscriptionItemId: 31 }),
    );
    const [unknown] = encodeLogMessages([usageEvent('skip-unknown', '1', { subscriptionItemId: 31 })]);
    // a later format's version byte: this sink cannot read it, and must not guess
    unknown!.value[0] = 3;
    const [truncated] = encodeLogMessages([cut!]);
    await produce(topic, [
      ...encodeLogMessages([before!]),
      unknown!,
      { value: truncated!.value.subarray(0, truncated!.value.length - 1) },
      ...encodeLogMessages([after!]),
    ]);
    const lines: { msg: string }[] = [];
    const log = createLogger({
      level: 'info',
      service: 'sinks',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    const runner = sinkRunner(topic, `${topic}-pg`, postgresSink, log);
    await runner.start();
    try {
      await eventually(async () => expect(await committedOffsets(topic, `${topic}-pg`)).toBe(4));
    } finally {
      await runner.stop();
    }
    const { rows } = await database.db.query<{ key: string }>(
      "SELECT idempotency_key AS key FROM usage_events WHERE idempotency_key LIKE 'skip-%' ORDER BY 1",
    );
    expect(rows).toEqual([{ key: 'skip-after' }, { key: 'skip-before' }]);
    expect(lines.filter((line) => line.msg === 'skipping a malformed usage message')).toHaveLength(2);
  });

  it('writes a full batch without waiting for its flush timer, then commits it', async () => {
    const topic = uniqueName('usage_sink_count');
    const events = Array.from({ length: 150 }, (_, i) =>
      usageEvent(`count-${i}`, '1', { subscriptionItemId: 30 }),
    );
    await produce(topic, encodeLogMessages(events));
    // a timer of a minute: only the count (batchSize 100) can start a write within the test
    const runner = sinkRunner(topic, `${topic}-pg`, postgresSink, runLogger('sinks'), 60_000);
    await runner.start();
    try {
      await eventually(async () => {
        const { rows } = await database.db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM usage_events WHERE idempotency_key LIKE 'count-%'",
        );
        expect(rows[0]!.n).toBe(150);
        expect(await committedOffsets(topic, `${topic}-pg`)).toBe(1);
      });
    } finally {
      await runner.stop();
    }
  });

  it('reports its lag while its writes fail, and none once it caught up, logging the outage once', async () => {
    const topic = uniqueName('usage_sink_lag');
    const events = Array.from({ length: 3 }, (_, i) =>
      usageEvent(`lag-${i}`, '1', { recordedAtMs: Date.now() - 60_000 }),
    );
    await produce(topic, encodeLogMessages(events));

    let failing = true;
    let firstFailedAt = 0;
    let recoveredAt = 0;
    const sink: UsageSink = {
      name: 'lagging-sink',
      write: async (batch) => {
        if (failing) {
          firstFailedAt ||= Date.now();
          throw new Error('the store is down');
        }
        await postgresSink.write(batch);
        recoveredAt ||= Date.now();
      },
      writeVoids: (voids) => postgresSink.writeVoids(voids),
    };
    const lines: { level: string; msg: string; err?: unknown; attempts?: number; seconds?: number }[] = [];
    const log = createLogger({
      level: 'info',
      service: 'sinks',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    const runner = sinkRunner(topic, `${topic}-lag`, sink, log);
    const gauge = async (metric: typeof sinkLagSeconds) =>
      (await metric.get()).values.find((value) => value.labels.sink === 'lagging-sink')?.value;
    await runner.start();
    try {
      await eventually(async () => {
        expect(await gauge(sinkLagSeconds)).toBeGreaterThanOrEqual(60);
        expect(await gauge(sinkLagMessages)).toBeGreaterThan(0);
      });
      // several attempts fail (100 ms, 200, 400, 800... apart): one line says so, not one each
      await new Promise((resolve) => setTimeout(resolve, 2000));
      // nothing written, nothing committed: a restart now must read the events again
      expect(await committedOffsets(topic, `${topic}-lag`)).toBe(0);
      failing = false;
      await eventually(async () => {
        expect(await gauge(sinkLagSeconds)).toBe(0);
        expect(await gauge(sinkLagMessages)).toBe(0);
      });
      expect(await committedOffsets(topic, `${topic}-lag`)).toBe(1);
      const about = lines.filter((line) => line.msg.startsWith('usage sink'));
      expect(about.map((line) => [line.level, line.msg])).toEqual([
        ['error', 'usage sink write failed; retrying'],
        ['info', 'usage sink writes again'],
      ]);
      // how long the outage lasted, from its first failed attempt, not from its last (the last
      // pause between attempts, 1.6 s and more after 2 s of failing, would be left out)
      const again = about.find((line) => line.msg === 'usage sink writes again')!;
      expect(again.seconds).toBeGreaterThanOrEqual(Math.floor((recoveredAt - firstFailedAt) / 1000));
      expect(again.attempts).toBeGreaterThanOrEqual(4);
      expect(lines.some((line) => line.err)).toBe(false);
    } finally {
      await runner.stop();
    }
  });
});
