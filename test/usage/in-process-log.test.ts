import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  InProcessUsageEventLog,
  PostgresUsageSink,
  type UsageEventRecord,
  type UsageSink,
} from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The embedded log (`npm start`) gathers appends by Nagle's rule, never by a fixed wait: a lone
 * append is written at the end of its turn, and appends made while a write runs go together in
 * the next one. The linger here is a minute, so a log that waited it out would time the test out.
 */

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('in_process_log');
});
afterAll(() => database.drop());

function event(key: string): UsageEventRecord {
  const now = Date.now();
  return {
    id: randomUUID(),
    orgId: 1,
    subscriptionItemId: 10,
    idempotencyKey: key,
    quantity: '1.5',
    occurredAtMs: now,
    recordedAtMs: now,
  };
}

/** The real Postgres sink, counting the events of each write it is given. */
function countingSink(): { sink: PostgresUsageSink; writes: number[] } {
  const sink = new PostgresUsageSink(database.db);
  const writes: number[] = [];
  const write = sink.writeReturningStored.bind(sink);
  sink.writeReturningStored = (events) => {
    writes.push(events.length);
    return write(events);
  };
  return { sink, writes };
}

describe('the in-process usage log', () => {
  it('writes a lone append at once, not after the linger', async () => {
    const { sink, writes } = countingSink();
    const log = new InProcessUsageEventLog(sink, [], { lingerMs: 60_000 });
    const started = Date.now();
    const [stored] = await log.append([event(`lone-${randomUUID()}`)]);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(stored).toBeDefined();
    expect(writes).toEqual([1]);
    await log.close();
  }, 30_000);

  it('gathers the appends made while a write runs into the next write', async () => {
    const { sink, writes } = countingSink();
    const log = new InProcessUsageEventLog(sink, [], { lingerMs: 60_000 });
    const first = log.append([event(`a-${randomUUID()}`)]);
    // later turns, while the first write is running
    await nextTurn();
    const windows = [[event(`b-${randomUUID()}`), event(`c-${randomUUID()}`)], [event(`d-${randomUUID()}`)]];
    const second = log.append(windows[0]!);
    await nextTurn();
    const third = log.append(windows[1]!);
    const started = Date.now();
    const results = await Promise.all([first, second, third]);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(writes).toEqual([1, 3]);
    // each append answered with its own events, a window of two before one of one
    expect(results.slice(1).map((r) => r.map((e) => e.id))).toEqual(windows.map((w) => w.map((e) => e.id)));
    const { rows } = await database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM usage_events WHERE id = ANY($1::uuid[])',
      [results.flat().map((r) => r.id)],
    );
    expect(rows[0]!.n).toBe(4);
    await log.close();
  }, 30_000);

  it('writes the stored events and the voids to its further stores before it answers', async () => {
    // a further store (ClickHouse without Kafka, in production): here a second database
    const further = await createTestDatabase('in_process_log_further');
    try {
      const log = new InProcessUsageEventLog(
        new PostgresUsageSink(database.db),
        [new PostgresUsageSink(further.db)],
        { lingerMs: 0 },
      );
      const key = `further-${randomUUID()}`;
      const [first] = await log.append([event(key)]);
      // a repeat under a new id: the further store gets the event Postgres holds, once
      const [repeat] = await log.append([{ ...event(key), quantity: '9' }]);
      expect(repeat!.id).toBe(first!.id);
      const rows = () =>
        further.db
          .query<{ id: string; quantity: string; voided: boolean }>(
            'SELECT id, quantity::text AS quantity, voided_at IS NOT NULL AS voided FROM usage_events WHERE idempotency_key = $1',
            [key],
          )
          .then((r) => r.rows);
      expect(await rows()).toEqual([{ id: first!.id, quantity: '1.50000000', voided: false }]);
      await log.appendVoids([{ event: first!, voidedAtMs: Date.now() }]);
      expect(await rows()).toEqual([{ id: first!.id, quantity: '1.50000000', voided: true }]);
      // in Postgres but not in the further store (its write failed): the client's retry brings it there
      const missed = event(`missed-${randomUUID()}`);
      await new PostgresUsageSink(database.db).write([missed]);
      await log.append([{ ...event(missed.idempotencyKey), quantity: '9' }]);
      const { rows: reached } = await further.db.query<{ id: string }>(
        'SELECT id FROM usage_events WHERE idempotency_key = $1',
        [missed.idempotencyKey],
      );
      expect(reached).toEqual([{ id: missed.id }]);
      await log.close();
    } finally {
      await further.drop();
    }
  }, 30_000);
});

/** A listener (a policy on counted usage) that records what it is handed, in order. */
function recordingListener(options: { hang?: boolean; failFirst?: boolean } = {}): {
  listener: UsageSink;
  heard: string[][];
} {
  const heard: string[][] = [];
  const listener: UsageSink = {
    name: 'recording',
    write(events) {
      heard.push(events.map((e) => `event ${e.idempotencyKey}`));
      if (options.failFirst && heard.length === 1) return Promise.reject(new Error('the listener failed'));
      return options.hang ? new Promise(() => {}) : Promise.resolve();
    },
    writeVoids(voids) {
      heard.push(voids.map((v) => `void ${v.event.idempotencyKey}`));
      return Promise.resolve();
    },
  };
  return { listener, heard };
}

/** A log on the file's database whose one listener is handed what was written at most once a minute. */
function logHeardEveryMinute() {
  const { listener, heard } = recordingListener();
  const log = new InProcessUsageEventLog(new PostgresUsageSink(database.db), [], {
    lingerMs: 0,
    listeners: [listener],
    listenerIntervalMs: 60_000,
  });
  return { log, heard };
}

describe('the in-process log and its listeners', () => {
  it('answers an append without waiting for a listener', async () => {
    const { listener, heard } = recordingListener({ hang: true });
    const log = new InProcessUsageEventLog(new PostgresUsageSink(database.db), [], {
      lingerMs: 0,
      listeners: [listener],
      listenerIntervalMs: 0,
    });
    const key = `hang-${randomUUID()}`;
    const [stored] = await log.append([event(key)]);
    expect(stored!.idempotencyKey).toBe(key);
    // handed all the same, soon after
    await vi.waitFor(() => expect(heard).toEqual([[`event ${key}`]]));
  }, 30_000);

  it('hands a lone write at once, then at most one batch per interval, the rest at close', async () => {
    const { log, heard } = logHeardEveryMinute();
    const [a, b, c] = [`a-${randomUUID()}`, `b-${randomUUID()}`, `c-${randomUUID()}`];
    await log.append([event(a)]);
    // the first write after a quiet interval is not held for it
    await vi.waitFor(() => expect(heard).toEqual([[`event ${a}`]]), { timeout: 10_000 });
    // two more writes within the interval: not handed one by one
    await log.append([event(b)]);
    await log.append([event(c)]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(heard).toEqual([[`event ${a}`]]);
    // closing hands what was written, as one batch, in order
    await log.close();
    expect(heard).toEqual([[`event ${a}`], [`event ${b}`, `event ${c}`]]);
  }, 30_000);

  it('hands an event before its void, and the voids after the events written before them', async () => {
    const { log, heard } = logHeardEveryMinute();
    const [first, second, third] = [`v1-${randomUUID()}`, `v2-${randomUUID()}`, `v3-${randomUUID()}`];
    await log.append([event(first)]);
    await vi.waitFor(() => expect(heard).toHaveLength(1), { timeout: 10_000 });
    const [stored] = await log.append([event(second)]);
    await log.appendVoids([{ event: stored!, voidedAtMs: Date.now() }]);
    await log.append([event(third)]);
    await log.close();
    expect(heard).toEqual([[`event ${first}`], [`event ${second}`], [`void ${second}`], [`event ${third}`]]);
  }, 30_000);

  it('hands the voids of one interval together, in the order they were written', async () => {
    const { log, heard } = logHeardEveryMinute();
    const [first, second] = [`w1-${randomUUID()}`, `w2-${randomUUID()}`];
    const [one] = await log.append([event(first)]);
    await vi.waitFor(() => expect(heard).toHaveLength(1), { timeout: 10_000 });
    // within the interval: held, then handed at close as one run per kind, each in order
    const [two] = await log.append([event(second)]);
    for (const stored of [one!, two!]) await log.appendVoids([{ event: stored, voidedAtMs: Date.now() }]);
    await log.close();
    expect(heard).toEqual([[`event ${first}`], [`event ${second}`], [`void ${first}`, `void ${second}`]]);
  }, 30_000);

  it("keeps handing writes after a listener's failure, to it and to the listeners after it", async () => {
    const failing = recordingListener({ failFirst: true });
    const next = recordingListener();
    const log = new InProcessUsageEventLog(new PostgresUsageSink(database.db), [], {
      lingerMs: 0,
      listeners: [failing.listener, next.listener],
      listenerIntervalMs: 0,
    });
    const [first, second] = [`fails-${randomUUID()}`, `after-${randomUUID()}`];
    await log.append([event(first)]);
    await vi.waitFor(() => expect(next.heard).toEqual([[`event ${first}`]]), { timeout: 10_000 });
    await log.append([event(second)]);
    await log.close();
    expect(failing.heard).toEqual([[`event ${first}`], [`event ${second}`]]);
    expect(next.heard).toEqual([[`event ${first}`], [`event ${second}`]]);
  }, 30_000);

  it('hands a repeat of an identity as the event Postgres holds, not the repeat', async () => {
    const heard: UsageEventRecord[] = [];
    const listener: UsageSink = {
      name: 'keeping',
      async write(events) {
        heard.push(...events);
      },
      async writeVoids() {},
    };
    const log = new InProcessUsageEventLog(new PostgresUsageSink(database.db), [], {
      lingerMs: 0,
      listeners: [listener],
      listenerIntervalMs: 0,
    });
    const key = `repeat-${randomUUID()}`;
    const [first] = await log.append([event(key)]);
    await log.append([{ ...event(key), quantity: '9' }]);
    await log.close();
    expect(heard.map((e) => [e.id, Number(e.quantity)])).toEqual([
      [first!.id, 1.5],
      [first!.id, 1.5],
    ]);
  }, 30_000);

  it('writes what was appended before close() and hands it to the listeners before close() resolves', async () => {
    const { log, heard } = logHeardEveryMinute();
    const key = `closing-${randomUUID()}`;
    const appended = log.append([event(key)]);
    await log.close();
    expect(heard).toEqual([[`event ${key}`]]);
    await appended;
  }, 30_000);
});
