import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageEventRecord } from '../../libs/usage/domain/event.js';
import { PostgresUsageSink } from '../../libs/usage/index.js';
import { basicCatalog, customerIn, subscribe } from '../billing/fixtures.js';
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

/** A metered usage item, and a customer's subscription whose invoices the test writes itself. */
async function itemWithSubscription() {
  const itemId = (await createUsageItems(database.db, orgId)).metered;
  const { apiCalls } = await basicCatalog(database.db, orgId);
  const customerId = await customerIn(database.db, orgId);
  const subscription = await subscribe(database.db, orgId, {
    customer_id: customerId,
    items: [{ product_id: apiCalls }],
  });
  return { itemId, customerId, subscription };
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

  it("credits a void to a posted period over its item's window [start, end), and marks the period from its first instant", async () => {
    const { itemId, customerId, subscription } = await itemWithSubscription();
    const { rows: invoices } = await database.db.query<{ id: string }>(
      `INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start,
         period_end, due_date, status, currency, posted_at)
       VALUES ($1, $2, $3, $4, '2026-02-01', '2026-01-01', '2026-02-01', '2026-02-01', 'POSTED', 'CAD', now())
       RETURNING id`,
      [orgId, `INV-${itemId}`, customerId, subscription.id],
    );
    // January, billed and compared; the item counted within [Jan 10, Jan 20) of it only
    await database.db.query(
      `INSERT INTO usage_billed_periods (org_id, subscription_id, subscription_item_id, period_start, period_end,
         window_start, window_end, invoice_id, period_quantity, included_units, unit_price, dirty)
       VALUES ($1, $2, $3, '2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', '2026-01-10T00:00:00Z',
         '2026-01-20T00:00:00Z', $4, 100, 0, 1, false),
              ($1, $2, $3, '2025-12-01T00:00:00Z', '2026-01-01T00:00:00Z', '2025-12-01T00:00:00Z',
         '2026-01-01T00:00:00Z', $4, 50, 0, 1, false),
              ($1, $2, $3 + 1, '2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', '2026-01-01T00:00:00Z',
         '2026-02-01T00:00:00Z', $4, 70, 0, 1, false)`,
      [orgId, subscription.id, itemId, invoices[0]!.id],
    );
    const atPeriodStart = event(itemId, '4', '2026-01-01T00:00:00Z');
    const atWindowStart = event(itemId, '1', '2026-01-10T00:00:00Z');
    const atWindowEnd = event(itemId, '2', '2026-01-20T00:00:00Z');
    const sink = new PostgresUsageSink(database.db);
    await sink.write([atPeriodStart, atWindowStart, atWindowEnd]);
    const period = async (start: string) =>
      (
        await database.db.query<{ dirty: boolean; period_quantity: string }>(
          `SELECT dirty, period_quantity::text AS period_quantity FROM usage_billed_periods
            WHERE org_id = $1 AND subscription_item_id = $2 AND period_start = $3`,
          [orgId, itemId, start],
        )
      ).rows;
    const voidOne = async (voided: UsageEventRecord) => {
      await database.db.query(
        `UPDATE usage_billed_periods SET dirty = false
          WHERE org_id = $1 AND subscription_item_id = $2 AND period_start = '2026-01-01T00:00:00Z'`,
        [orgId, itemId],
      );
      await sink.writeVoids([{ event: voided, voidedAtMs: Date.now() }]);
      return period('2026-01-01T00:00:00Z');
    };
    // January's first instant is January's, though outside the window: marked, nothing credited
    expect(await voidOne(atPeriodStart)).toEqual([{ dirty: true, period_quantity: '100.00000000' }]);
    // the window's end is outside it: marked, nothing credited
    expect(await voidOne(atWindowEnd)).toEqual([{ dirty: true, period_quantity: '100.00000000' }]);
    // the window's first instant is inside it: credited
    expect(await voidOne(atWindowStart)).toEqual([{ dirty: true, period_quantity: '99.00000000' }]);
    // December, the item's other period, is neither marked nor credited by January's voids
    expect(await period('2025-12-01T00:00:00Z')).toEqual([{ dirty: false, period_quantity: '50.00000000' }]);
    // nor is another item's January
    const { rows: otherItem } = await database.db.query(
      `SELECT dirty, period_quantity::text AS period_quantity FROM usage_billed_periods
        WHERE org_id = $1 AND subscription_item_id = $2`,
      [orgId, itemId + 1],
    );
    expect(otherItem).toEqual([{ dirty: false, period_quantity: '70.00000000' }]);
  });

  it('credits a posted period, not a draft, by every voided event, equal quantities included', async () => {
    const { itemId, customerId, subscription } = await itemWithSubscription();
    const { rows: invoices } = await database.db.query<{ id: string }>(
      `INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start,
         period_end, due_date, status, currency, posted_at)
       VALUES ($1, $2, $3, $4, '2026-02-01', '2026-01-01', '2026-02-01', '2026-02-01', 'POSTED', 'CAD', now()),
              ($1, $5, $3, $4, '2026-03-01', '2026-02-01', '2026-03-01', '2026-03-01', 'DRAFT', 'CAD', NULL)
       RETURNING id`,
      [orgId, `INV-P-${itemId}`, customerId, subscription.id, `INV-D-${itemId}`],
    );
    // January on a posted invoice, February on a draft one: a draft is re-rated from the events, so
    // a void only marks it, while a posted period keeps what it billed less what was voided since
    await database.db.query(
      `INSERT INTO usage_billed_periods (org_id, subscription_id, subscription_item_id, period_start, period_end,
         window_start, window_end, invoice_id, period_quantity, included_units, unit_price, dirty)
       VALUES ($1, $2, $3, '2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', '2026-01-01T00:00:00Z',
         '2026-02-01T00:00:00Z', $4, 100, 0, 1, false),
              ($1, $2, $3, '2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z', '2026-02-01T00:00:00Z',
         '2026-03-01T00:00:00Z', $5, 80, 0, 1, false)`,
      [orgId, subscription.id, itemId, invoices[0]!.id, invoices[1]!.id],
    );
    // two January events of one quantity, voided in one call: both leave what January billed (a
    // sum over distinct quantities would credit one of them)
    const january = [event(itemId, '3', '2026-01-05T00:00:00Z'), event(itemId, '3', '2026-01-06T00:00:00Z')];
    const february = event(itemId, '5', '2026-02-05T00:00:00Z');
    const sink = new PostgresUsageSink(database.db);
    await sink.write([...january, february]);
    await sink.writeVoids(
      [...january, february].map((voided) => ({ event: voided, voidedAtMs: Date.now() })),
    );
    const { rows } = await database.db.query(
      `SELECT period_start::date::text AS start, dirty, period_quantity::text AS period_quantity
         FROM usage_billed_periods WHERE org_id = $1 AND subscription_item_id = $2 ORDER BY period_start`,
      [orgId, itemId],
    );
    expect(rows).toEqual([
      { start: '2026-01-01', dirty: true, period_quantity: '94.00000000' },
      { start: '2026-02-01', dirty: true, period_quantity: '80.00000000' },
    ]);
  });

  it("voids an event only in the organization the void names, not another organization's", async () => {
    const itemId = (await createUsageItems(database.db, orgId)).metered;
    const stored = event(itemId, '5', '2026-02-03T10:00:00Z');
    const sink = new PostgresUsageSink(database.db);
    await sink.write([stored]);
    // the event's id under another organization: not this event
    await sink.writeVoids([{ event: { ...stored, orgId: orgId + 1 }, voidedAtMs: Date.now() }]);
    const { rows } = await database.db.query('SELECT voided_at FROM usage_events WHERE id = $1', [stored.id]);
    expect(rows).toEqual([{ voided_at: null }]);
    expect(await dailyTotals(itemId)).toEqual({ '2026-02-03': '5.00000000' });
  });

  it('finds the event stored under an identity: its item and key both, in its organization', async () => {
    const metered = 900_001;
    const other = 900_002;
    const key = `find-${metered}`;
    const first = { ...event(metered, '1', '2026-01-13T00:00:00Z'), idempotencyKey: key };
    const second = { ...event(other, '2', '2026-01-13T00:00:00Z'), idempotencyKey: key };
    const sink = new PostgresUsageSink(database.db);
    await sink.write([first, second]);
    for (const wanted of [first, second]) {
      const found = await sink.find({
        orgId,
        subscriptionItemId: wanted.subscriptionItemId,
        idempotencyKey: key,
      });
      expect(found).toMatchObject({ id: wanted.id, subscriptionItemId: wanted.subscriptionItemId });
    }
    expect(
      await sink.find({ orgId: orgId + 1_000_000, subscriptionItemId: metered, idempotencyKey: key }),
    ).toBeNull();
    expect(await sink.find({ orgId, subscriptionItemId: metered, idempotencyKey: `${key}-none` })).toBeNull();
  });
});
