import type { Queryable } from '../../db/index.js';
import type { UsageEventRecord, UsageIdentity, UsageVoidRecord } from '../domain/event.js';
import type { UsageSink } from './sink.js';

/**
 * The insert, and in the same statement the daily totals of what it inserted: a redelivered event
 * is not inserted, so it adds nothing (usage_record_events, migrations 016 and 022). An event
 * recorded earlier than the stored one of its identity replaces it (unless that one is voided).
 * Answers the ids stored by the call.
 */
const INSERT = `SELECT id FROM usage_record_events(
  $1::uuid[], $2::bigint[], $3::bigint[], $4::text[], $5::numeric[], $6::timestamptz[], $7::timestamptz[]) AS id`;

/** Its consumer group's name (after KAFKA_CONSUMER_GROUP_PREFIX): billing waits for it to catch up. */
export const POSTGRES_SINK_NAME = 'pg-sink';

/**
 * `usage_events` in Postgres, the source of truth billing reads. The unique key on
 * (org_id, subscription_item_id, idempotency_key) absorbs redeliveries; of two events of one
 * identity (a retry after a lost acknowledgement) the earliest recorded stays, as in ClickHouse,
 * whichever arrives first: the log does not keep an item's events in order.
 */
export class PostgresUsageSink implements UsageSink {
  readonly name = POSTGRES_SINK_NAME;

  constructor(private readonly db: Queryable) {}

  async write(events: readonly UsageEventRecord[]): Promise<void> {
    if (events.length) await this.db.query(INSERT, columns(events));
  }

  /** A redelivered event is dropped by the unique key, so its voided_at stays. */
  async writeVoids(voids: readonly UsageVoidRecord[]): Promise<void> {
    if (!voids.length) return;
    await this.db.query(
      `WITH voided AS (
         UPDATE usage_events e SET voided_at = v.voided_at
           FROM unnest($1::bigint[], $2::uuid[], $3::timestamptz[]) AS v (org_id, id, voided_at)
          WHERE e.org_id = v.org_id AND e.id = v.id AND e.voided_at IS NULL
          RETURNING e.org_id, e.subscription_item_id, e.occurred_at, e.quantity
       )
       ${SUBTRACT_VOIDED}`,
      [
        voids.map((v) => v.event.orgId),
        voids.map((v) => v.event.id),
        voids.map((v) => new Date(v.voidedAtMs).toISOString()),
      ],
    );
  }

  /**
   * Writes and reports, per event, the event Postgres holds for its identity: the event itself when
   * it was inserted, else the one stored earlier. `inserted` lists the events that are new.
   */
  async writeReturningStored(
    events: readonly UsageEventRecord[],
  ): Promise<{ stored: UsageEventRecord[]; inserted: UsageEventRecord[] }> {
    if (!events.length) return { stored: [], inserted: [] };
    const { rows } = await this.db.query<{ id: string }>(INSERT, columns(events));
    const insertedIds = new Set(rows.map((row) => row.id));
    const inserted = events.filter((event) => insertedIds.has(event.id));
    if (inserted.length === events.length) return { stored: [...events], inserted };

    const conflicting = events.filter((event) => !insertedIds.has(event.id));
    const { rows: existing } = await this.db.query<StoredRow>(
      `${SELECT_STORED}
        WHERE (org_id, subscription_item_id, idempotency_key) IN
              (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[]))`,
      [
        conflicting.map((e) => e.orgId),
        conflicting.map((e) => e.subscriptionItemId),
        conflicting.map((e) => e.idempotencyKey),
      ],
    );
    const byIdentity = new Map<string, UsageEventRecord>();
    for (const row of existing) {
      byIdentity.set(identityOf(row.org_id, row.subscription_item_id, row.idempotency_key), recordOf(row));
    }
    // An identity twice in one batch: the first one was inserted, and it is the stored one.
    for (const event of inserted) {
      const identity = identityOf(event.orgId, event.subscriptionItemId, event.idempotencyKey);
      if (!byIdentity.has(identity)) byIdentity.set(identity, event);
    }
    const stored = events.map((event) =>
      insertedIds.has(event.id)
        ? event
        : (byIdentity.get(identityOf(event.orgId, event.subscriptionItemId, event.idempotencyKey)) ?? event),
    );
    return { stored, inserted };
  }

  /** The event stored under an identity, or null. */
  async find(identity: UsageIdentity): Promise<UsageEventRecord | null> {
    const { rows } = await this.db.query<StoredRow>(
      `${SELECT_STORED} WHERE org_id = $1 AND subscription_item_id = $2 AND idempotency_key = $3`,
      [identity.orgId, identity.subscriptionItemId, identity.idempotencyKey],
    );
    return rows[0] ? recordOf(rows[0]) : null;
  }
}

/**
 * After a CTE `voided` of the events a statement just voided (voided_at was null): their quantity
 * leaves the daily totals, and the invoiced periods they fell in are marked for comparison (a
 * draft is re-rated; libs/billing's usage_billed_periods, migration 019). A void of a posted
 * period (a correction that credits it) lowers what the period billed by the event, so late usage
 * of it later is billed from what the customer kept paying for. Only the statement that set voided_at subtracts, so a void applied twice
 * (by the api and by the pg-sink) subtracts once.
 */
export const SUBTRACT_VOIDED = `
  , marked AS (
    UPDATE usage_billed_periods b SET dirty = true, period_quantity = b.period_quantity - x.credited
      FROM (SELECT p.org_id, p.subscription_item_id, p.period_start,
                   coalesce(sum(v.quantity) FILTER (
                     WHERE i.posted_at IS NOT NULL AND v.occurred_at >= p.window_start AND v.occurred_at < p.window_end
                   ), 0) AS credited
              FROM voided v
              JOIN usage_billed_periods p ON p.org_id = v.org_id AND p.subscription_item_id = v.subscription_item_id
               AND p.period_start <= v.occurred_at AND p.period_end > v.occurred_at
              JOIN invoices i ON i.org_id = p.org_id AND i.id = p.invoice_id
             GROUP BY 1, 2, 3) x
     WHERE b.org_id = x.org_id AND b.subscription_item_id = x.subscription_item_id AND b.period_start = x.period_start
  )
  UPDATE usage_daily_totals t SET quantity = t.quantity - s.quantity
    FROM (SELECT org_id, subscription_item_id, (occurred_at AT TIME ZONE 'UTC')::date AS day, sum(quantity) AS quantity
            FROM voided GROUP BY 1, 2, 3) s
   WHERE t.org_id = s.org_id AND t.subscription_item_id = s.subscription_item_id AND t.day = s.day`;

const SELECT_STORED = `
  SELECT id, org_id, subscription_item_id, idempotency_key, quantity::text AS quantity, occurred_at, recorded_at
    FROM usage_events`;

interface StoredRow {
  id: string;
  org_id: number;
  subscription_item_id: number;
  idempotency_key: string;
  quantity: string;
  occurred_at: Date;
  recorded_at: Date;
}

function recordOf(row: StoredRow): UsageEventRecord {
  return {
    id: row.id,
    orgId: row.org_id,
    subscriptionItemId: row.subscription_item_id,
    idempotencyKey: row.idempotency_key,
    quantity: row.quantity,
    occurredAtMs: row.occurred_at.getTime(),
    recordedAtMs: row.recorded_at.getTime(),
  };
}

function identityOf(orgId: number, subscriptionItemId: number, key: string): string {
  return `${orgId}\u0000${subscriptionItemId}\u0000${key}`;
}

function columns(events: readonly UsageEventRecord[]): unknown[] {
  const ids: string[] = [];
  const orgs: number[] = [];
  const items: number[] = [];
  const keys: string[] = [];
  const quantities: string[] = [];
  const occurred: string[] = [];
  const recorded: string[] = [];
  for (const event of events) {
    ids.push(event.id);
    orgs.push(event.orgId);
    items.push(event.subscriptionItemId);
    keys.push(event.idempotencyKey);
    quantities.push(event.quantity);
    occurred.push(new Date(event.occurredAtMs).toISOString());
    recorded.push(new Date(event.recordedAtMs).toISOString());
  }
  return [ids, orgs, items, keys, quantities, occurred, recorded];
}
