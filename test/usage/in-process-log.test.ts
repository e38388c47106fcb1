import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessUsageEventLog, PostgresUsageSink, type UsageEventRecord } from '../../libs/usage/index.js';
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
    const second = log.append([event(`b-${randomUUID()}`)]);
    await nextTurn();
    const third = log.append([event(`c-${randomUUID()}`), event(`d-${randomUUID()}`)]);
    const started = Date.now();
    const results = await Promise.all([first, second, third]);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(results.map((r) => r.length)).toEqual([1, 1, 2]);
    expect(writes).toEqual([1, 3]);
    const { rows } = await database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM usage_events WHERE id = ANY($1::uuid[])',
      [results.flat().map((r) => r.id)],
    );
    expect(rows[0]!.n).toBe(4);
    await log.close();
  }, 30_000);
});
