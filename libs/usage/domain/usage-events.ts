import type { Database, Queryable } from '../../db/index.js';
import { DependencyUnavailableError } from '../../dependency-guard/index.js';
import { ApiError } from '../../errors/index.js';
import { readPage } from '../../list-pages/index.js';
import { isUuid, type PaginationQuery, type UsageEventWithStatus } from '../../schemas/index.js';
import type { UsageReadStores } from '../aggregation/read-stores.js';
import { SUBTRACT_VOIDED } from '../sinks/postgres.js';
import type { UsageEventRecord, UsageVoidRecord } from './event.js';

/**
 * Reading back and voiding recorded usage events (docs/architecture.md, "The usage read-back"). Events are read from Postgres
 * `usage_events`: the pg-sink's store in the distributed mode, written by ingest itself embedded.
 */

export interface UsageEventFilter {
  subscriptionItemId?: number | undefined;
  /** Event timestamps >= from. */
  from?: Date | undefined;
  /** Event timestamps < to. */
  to?: Date | undefined;
  status?: 'ACTIVE' | 'VOIDED' | undefined;
}

export interface EventRow {
  id: string;
  org_id: number;
  subscription_item_id: number;
  idempotency_key: string;
  quantity: string;
  occurred_at: Date;
  recorded_at: Date;
  voided_at: Date | null;
}

const COLUMNS =
  'id, org_id, subscription_item_id, idempotency_key, quantity::text AS quantity, occurred_at, recorded_at, voided_at';

export function toPublic(row: EventRow): UsageEventWithStatus {
  return {
    id: row.id,
    object: 'usage_event',
    subscription_item_id: Number(row.subscription_item_id),
    quantity: Number(row.quantity),
    timestamp: row.occurred_at.toISOString(),
    idempotency_key: row.idempotency_key,
    recorded_at: row.recorded_at.toISOString(),
    status: row.voided_at ? 'VOIDED' : 'ACTIVE',
    voided_at: row.voided_at ? row.voided_at.toISOString() : null,
  };
}

export function toRecord(row: EventRow): UsageEventRecord {
  return {
    id: row.id,
    orgId: Number(row.org_id),
    subscriptionItemId: Number(row.subscription_item_id),
    idempotencyKey: row.idempotency_key,
    quantity: row.quantity,
    occurredAtMs: row.occurred_at.getTime(),
    recordedAtMs: row.recorded_at.getTime(),
  };
}

/** Newest first (timestamp, then id): a stable order for paging (see libs/list-pages). */
export async function listUsageEvents(
  db: Queryable,
  orgId: number,
  filter: UsageEventFilter,
  page: PaginationQuery,
): Promise<{ data: UsageEventWithStatus[]; total: number }> {
  const conditions = ['org_id = $1'];
  const values: unknown[] = [orgId];
  if (filter.subscriptionItemId !== undefined) {
    values.push(filter.subscriptionItemId);
    conditions.push(`subscription_item_id = $${values.length}`);
  }
  if (filter.from !== undefined) {
    values.push(filter.from);
    conditions.push(`occurred_at >= $${values.length}`);
  }
  if (filter.to !== undefined) {
    values.push(filter.to);
    conditions.push(`occurred_at < $${values.length}`);
  }
  if (filter.status === 'ACTIVE') conditions.push('voided_at IS NULL');
  if (filter.status === 'VOIDED') conditions.push('voided_at IS NOT NULL');
  const where = conditions.join(' AND ');
  const { rows, total } = await readPage<EventRow>(
    db,
    {
      table: 'usage_events',
      alias: 'u',
      columns: COLUMNS,
      where,
      values,
      sortedBy: 'occurred_at',
    },
    page,
  );
  return { data: rows.map(toPublic), total: await total };
}

export async function findEvent(
  db: Queryable,
  orgId: number,
  id: string,
  lock = false,
): Promise<EventRow | undefined> {
  if (!isUuid(id)) return undefined;
  const { rows } = await db.query<EventRow>(
    `SELECT ${COLUMNS} FROM usage_events WHERE org_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
    [orgId, id.toLowerCase()],
  );
  return rows[0];
}

export async function getUsageEvent(db: Queryable, orgId: number, id: string): Promise<UsageEventWithStatus> {
  const row = await findEvent(db, orgId, id);
  if (!row) throw ApiError.notFound(`Usage event ${id}`);
  return toPublic(row);
}

/** How long a void waits for an event accepted but not yet in Postgres (the pg-sink's lag). */
export const VOID_CATCH_UP_MS = 5000;

/**
 * Voids an event: it then counts nowhere. Idempotent: voiding a voided event answers it unchanged
 * (and sends its void down the log again, for a store that may have missed it).
 *
 * The race with the event still in flight (answered 201, not yet written by the pg-sink): an id
 * not found waits until the pg-sink holds every event accepted before the void began, then looks
 * again, so the void is applied to the event rather than lost. It needs the event itself: its
 * subscription decides tenancy and the 409, and ClickHouse replaces the event's row with a voided
 * copy of it. The event is in Postgres before its void is accepted, and the void's ClickHouse
 * version outranks the event's, so each store ends voided whatever order its sink meets the event
 * (a redelivery, or an earlier recorded event of the identity) and the void in: Postgres never
 * replaces a voided event (migration 022).
 *
 * Transaction: the event row FOR UPDATE and its subscription FOR SHARE, which a billing run's
 * claim (FOR NO KEY UPDATE SKIP LOCKED) skips, so a period is never invoiced between the 409
 * check and the void; the void is on the log before the commit, and the run waits for the sinks.
 */
export async function voidUsageEvent(
  db: Database,
  stores: UsageReadStores,
  orgId: number,
  id: string,
  now: () => Date = () => new Date(),
): Promise<UsageEventWithStatus> {
  if (!isUuid(id)) throw ApiError.notFound(`Usage event ${id}`);
  if (!(await findEvent(db, orgId, id))) {
    const caughtUp = await stores.eventsCaughtUp(VOID_CATCH_UP_MS);
    if (!(await findEvent(db, orgId, id))) {
      if (!caughtUp) {
        throw ApiError.serviceUnavailable(
          'Recent usage events are still being written; retry the void shortly.',
          1,
        );
      }
      throw ApiError.notFound(`Usage event ${id}`);
    }
  }
  // the counter's change is undone if the void's transaction fails after it (counter.ts)
  let counted: { undo(): Promise<void> } | undefined;
  return db
    .transaction(async (tx) => {
      const row = (await findEvent(tx, orgId, id, true))!;
      const invoice = await invoiceCovering(tx, orgId, row);
      if (invoice) {
        throw ApiError.conflict(
          `Usage event ${row.id} belongs to a period already invoiced (invoice ${invoice.invoice_number}, ${invoice.id}); it cannot be voided.`,
        );
      }
      const voidedAt = row.voided_at ?? now();
      await appendVoid(stores, { event: toRecord(row), voidedAtMs: voidedAt.getTime() });
      if (!row.voided_at) {
        await tx.query(
          `WITH voided AS (
           UPDATE usage_events SET voided_at = $3 WHERE org_id = $1 AND id = $2 AND voided_at IS NULL
           RETURNING org_id, subscription_item_id, occurred_at, quantity
         )
         ${SUBTRACT_VOIDED}`,
          [orgId, row.id, voidedAt],
        );
        counted = await stores.counter?.voided(toRecord(row));
      }
      return toPublic({ ...row, voided_at: voidedAt });
    })
    .catch(async (error: unknown) => {
      await counted?.undo().catch(() => {});
      throw error;
    });
}

/**
 * The void on the log, or 503 with Retry-After: as for an event (ingest.ts), a void the log did not
 * acknowledge may or may not be on it, and the transaction around it rolls back, so the retry is
 * what settles it. An outage found by this very call is mapped by the log's guard already.
 */
export async function appendVoid(stores: UsageReadStores, record: UsageVoidRecord): Promise<void> {
  try {
    await stores.eventLog.appendVoids([record]);
  } catch (cause) {
    if (cause instanceof ApiError || cause instanceof DependencyUnavailableError) throw cause;
    throw ApiError.serviceUnavailable('The usage log did not take the void; retry shortly.', 1, cause);
  }
}

/**
 * The invoice of the period the event belongs to, when that period was already invoiced: it
 * began before the subscription's current period, and an invoice's days include its day. Only a
 * posted invoice counts: a DRAFT is re-rated by the void, and a draft withdrawn before it was
 * posted billed nothing (docs/decisions.md "Grace drafts").
 */
async function invoiceCovering(
  tx: Queryable,
  orgId: number,
  row: EventRow,
): Promise<{ id: string; invoice_number: string } | undefined> {
  const { rows: subscriptions } = await tx.query<{ id: number; current_period_start: Date }>(
    `SELECT s.id, s.current_period_start
       FROM subscription_items si JOIN subscriptions s ON s.org_id = si.org_id AND s.id = si.subscription_id
      WHERE si.org_id = $1 AND si.id = $2
      FOR SHARE OF s`,
    [orgId, row.subscription_item_id],
  );
  const subscription = subscriptions[0];
  if (!subscription || row.occurred_at >= subscription.current_period_start) return undefined;
  const { rows } = await tx.query<{ id: string; invoice_number: string }>(
    `SELECT id, invoice_number FROM invoices
      WHERE org_id = $1 AND subscription_id = $2 AND posted_at IS NOT NULL
        AND period_start <= ($3::timestamptz AT TIME ZONE 'UTC')::date
        AND period_end >= ($3::timestamptz AT TIME ZONE 'UTC')::date
      ORDER BY period_start DESC
      LIMIT 1`,
    [orgId, subscription.id, row.occurred_at],
  );
  return rows[0];
}
