import { randomUUID } from 'node:crypto';
import type { QueryResult, QueryResultRow } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Queryable } from '../../libs/db/index.js';
import { connectRedis, type Redis } from '../../libs/redis/index.js';
import type { UsageEventRecord } from '../../libs/usage/domain/event.js';
import type { KnownItem } from '../../libs/usage/domain/items.js';
import {
  type CounterPeriod,
  PostgresUsageSink,
  RedisUsageDedupStore,
  UsageCounter,
} from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { createUsageItems, usageEventRecord } from '../usage/support.js';

/*
 * A counter rebuilt from Postgres (domain/counter.ts) while events and voids keep coming: the
 * rebuild's snapshot is taken in the window its `eventsCaughtUp` step ends, so a test that does
 * its work inside that step has it land between the rebuild's cut and its snapshot, every time.
 */

const START = Date.UTC(2026, 0, 1);
const END = Date.UTC(2026, 1, 1);
const ONE = 100_000_000n;

let database: TestDatabase;
let redis: Redis;
let prefix: string;
let orgId: number;
let items: { metered: number; otherMetered: number };

beforeAll(async () => {
  database = await createTestDatabase('counter_rebuild_snapshot');
  redis = await connectRedis(testServices().redisUrl, 2000);
  prefix = `${uniqueName('rebuild')}:`;
  orgId = (await createTestOrg(database.db)).orgId;
  items = await createUsageItems(database.db, orgId);
});
afterAll(async () => {
  const keys = await redis?.keys(`${prefix}*`);
  if (keys?.length) await redis.del(...keys);
  redis?.disconnect();
  await database?.drop();
});

const schedule = {
  startDateMs: START,
  billingPeriod: 'monthly' as const,
  anchorDay: 1,
  currentPeriodStartMs: START,
  currentPeriodEndMs: END,
};
const periodOf = (subscriptionItemId: number): CounterPeriod => ({
  orgId,
  subscriptionItemId,
  startMs: START,
  endMs: END,
});

/**
 * The database, but `around` runs once inside the rebuild's snapshot transaction: before its
 * first statement, or right after it (once the snapshot is taken).
 */
function snapshotHooked(around: { before?: () => Promise<void>; after?: () => Promise<void> }): Database {
  let done = false;
  const hooked = (tx: Queryable): Queryable => ({
    async query<R extends QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>> {
      if (done) return tx.query<R>(text, values);
      done = true;
      await around.before?.();
      const result = await tx.query<R>(text, values);
      await around.after?.();
      return result;
    },
  });
  return {
    transaction: (work: (tx: Queryable) => Promise<unknown>, options?: unknown) =>
      database.db.transaction((tx) => work(hooked(tx)), options as never),
  } as unknown as Database;
}

/** A counter over the real store and database; `duringRebuild` runs between the cut and the snapshot. */
function counterWith(duringRebuild: () => Promise<void>, db?: Database): UsageCounter {
  let calls = 0;
  return new UsageCounter({
    store: new RedisUsageDedupStore(redis, prefix),
    db: db ?? database.db,
    items: { item: async () => ({ schedule }) as KnownItem },
    keyPrefix: `${prefix}${randomUUID()}:`,
    enabled: true,
    settleMs: 0,
    eventsCaughtUp: async () => {
      if (calls++ === 0) await duringRebuild();
      return true;
    },
  });
}

function event(itemId: number, quantity: string, day: number): UsageEventRecord {
  return { ...usageEventRecord(orgId, itemId, quantity), occurredAtMs: START + day * 86_400_000 };
}

const sink = () => new PostgresUsageSink(database.db);

/** Voids `e` in Postgres as voidUsageEvent's statement does, on `client` (in its transaction or not). */
const voidIn = (client: { query(text: string, values: unknown[]): Promise<unknown> }, e: UsageEventRecord) =>
  client.query('UPDATE usage_events SET voided_at = now() WHERE org_id = $1 AND id = $2', [orgId, e.id]);

describe('a counter rebuilt while usage changes', () => {
  it('a void whose transaction is still open at the snapshot is taken off once, by the journal', async () => {
    const kept = event(items.metered, '3', 1);
    const voided = event(items.metered, '2', 2);
    await sink().write([kept, voided]);
    const client = await database.db.pool.connect();
    try {
      // voidUsageEvent's order: the row voided in its transaction, the counter's change made
      // before the commit; the rebuild's snapshot does not show the void yet.
      const counter = counterWith(async () => {
        await client.query('BEGIN');
        await voidIn(client, voided);
        await counter.voided(voided);
      });
      const at = periodOf(items.metered);
      expect(await counter.used([at])).toEqual([3n * ONE]);
      await client.query('COMMIT');
      expect(await counter.used([at])).toEqual([3n * ONE]);
    } finally {
      client.release();
    }
  });

  it('an event journaled, stored and voided before the snapshot counts nowhere', async () => {
    const kept = event(items.otherMetered, '3', 3);
    await sink().write([kept]);
    const late = event(items.otherMetered, '4', 4);
    const store = new RedisUsageDedupStore(redis, prefix);
    const counter = counterWith(async () => {
      // reserved after the cut (journaled), written by the pg-sink, then voided: all before
      // the snapshot, which holds it voided
      const change = counter.eventChange(late, schedule)!;
      await store.reserve({
        bucket: undefined,
        entries: [{ key: `${change.key}:id:${late.idempotencyKey}`, pending: 'P', counter: change }],
        ttlSeconds: 3600,
      });
      await sink().write([late]);
      await voidIn(database.db, late);
      await counter.voided(late);
    });
    const at = periodOf(items.otherMetered);
    expect(await counter.used([at])).toEqual([3n * ONE]);
    expect(await counter.used([at])).toEqual([3n * ONE]);
  });

  it.each([
    ['committed just before the snapshot', 'before'],
    ['committed just after the snapshot was taken, before the journal is read', 'after'],
  ] as const)('a void %s is taken off once', async (_, when) => {
    const itemId = (await createUsageItems(database.db, orgId)).metered;
    const kept = event(itemId, '3', 5);
    const voided = event(itemId, '2', 6);
    await sink().write([kept, voided]);
    const voidNow = async () => {
      await voidIn(database.db, voided);
      await counter.voided(voided);
    };
    const counter = counterWith(async () => {}, snapshotHooked({ [when]: voidNow }));
    const at = periodOf(itemId);
    expect(await counter.used([at])).toEqual([3n * ONE]);
    expect(await counter.used([at])).toEqual([3n * ONE]);
  });
});
