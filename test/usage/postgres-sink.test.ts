import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageEventRecord } from '../../libs/usage/domain/event.js';
import { PostgresUsageSink } from '../../libs/usage/index.js';
import {
  createTestDatabase,
  recordingQueries,
  type SentQuery,
  type TestDatabase,
} from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { createUsageItems, usageEventRecord } from './support.js';

let database: TestDatabase;
let orgId: number;

beforeAll(async () => {
  database = await createTestDatabase('pg_sink');
  orgId = (await createTestOrg(database.db)).orgId;
});
afterAll(() => database?.drop());

function event(itemId: number, quantity: string, occurredAt: string): UsageEventRecord {
  return { ...usageEventRecord(orgId, itemId, quantity), occurredAtMs: Date.parse(occurredAt) };
}

async function dailyTotals(itemId: number): Promise<Record<string, string>> {
  const { rows } = await database.db.query<{ day: string; quantity: string }>(
    `SELECT day::text AS day, quantity::text AS quantity FROM usage_daily_totals
      WHERE org_id = $1 AND subscription_item_id = $2 ORDER BY day`,
    [orgId, itemId],
  );
  return Object.fromEntries(rows.map((row) => [row.day, row.quantity]));
}

describe('the Postgres usage sink', () => {
  it("takes a void off its event's UTC day whatever the session's time zone", async () => {
    const itemId = (await createUsageItems(database.db, orgId)).metered;
    // 23:30 UTC on the 10th is already the 11th in Tokyo, and still the 10th in Honolulu
    const late = event(itemId, '5', '2026-01-10T23:30:00Z');
    const early = event(itemId, '7', '2026-01-11T00:30:00Z');
    await new PostgresUsageSink(database.db).write([late, early]);
    expect(await dailyTotals(itemId)).toEqual({ '2026-01-10': '5.00000000', '2026-01-11': '7.00000000' });

    for (const [zone, voided] of [
      ['Asia/Tokyo', late],
      ['Pacific/Honolulu', early],
    ] as const) {
      await database.db.transaction(async (tx) => {
        await tx.query(`SET LOCAL TimeZone = '${zone}'`);
        await new PostgresUsageSink(tx).writeVoids([{ event: voided, voidedAtMs: Date.now() }]);
      });
    }
    expect(await dailyTotals(itemId)).toEqual({ '2026-01-10': '0.00000000', '2026-01-11': '0.00000000' });
  });

  it('writes a batch of new events in one statement, and reads back only for identities it met before', async () => {
    const itemId = (await createUsageItems(database.db, orgId)).metered;
    const sent: SentQuery[] = [];
    const sink = new PostgresUsageSink(recordingQueries(database.db, sent));
    const first = [event(itemId, '1', '2026-01-12T00:00:00Z'), event(itemId, '2', '2026-01-12T01:00:00Z')];
    const written = await sink.writeReturningStored(first);
    expect(written).toEqual({ stored: first, inserted: first });
    expect(sent).toHaveLength(1);

    // a retry of the first event (same identity, a new id, recorded later): Postgres keeps the first
    const retry = {
      ...first[0]!,
      id: randomUUID(),
      quantity: '9',
      recordedAtMs: first[0]!.recordedAtMs + 1000,
    };
    const fresh = event(itemId, '3', '2026-01-12T02:00:00Z');
    const again = await sink.writeReturningStored([retry, fresh]);
    expect(again).toEqual({ stored: [{ ...first[0], quantity: '1.00000000' }, fresh], inserted: [fresh] });
    expect(sent).toHaveLength(3);
    // the read-back asks for the retry's identity alone
    expect(sent[2]!.values[2]).toEqual([retry.idempotencyKey]);
  });
});
