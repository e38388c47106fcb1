import type { Queryable } from '../db/index.js';
import type { EmittedEventType } from '../schemas/index.js';

export interface DomainEvent {
  orgId: number;
  type: EmittedEventType;
  /** The webhook payload's `data` (DESIGN §6 "Event payload data"). */
  data: Record<string, unknown>;
}

export const OUTBOX_CHANNEL = 'outbox';

/**
 * Records a domain event in the outbox. Call it with the transaction that makes the change: the
 * event then exists exactly when the change does (never for a rollback, never lost on a crash).
 * The NOTIFY is delivered at commit and only wakes the dispatcher early; it also polls.
 */
export async function emitDomainEvent(tx: Queryable, event: DomainEvent): Promise<number> {
  const [id] = await emitDomainEvents(tx, [event]);
  return id!;
}

/**
 * Many events of one transaction in one INSERT and one NOTIFY (a billing run posts thousands);
 * ids are returned in the order given, which is also the order the dispatcher sees them in.
 */
export async function emitDomainEvents(tx: Queryable, events: readonly DomainEvent[]): Promise<number[]> {
  if (events.length === 0) return [];
  const { rows } = await tx.query<{ id: number }>(
    `WITH emitted AS (
       INSERT INTO outbox (org_id, event_type, data)
       SELECT org_id, event_type, data::jsonb
         FROM unnest($1::bigint[], $2::text[], $3::text[]) WITH ORDINALITY AS e(org_id, event_type, data, n)
        ORDER BY n
       RETURNING id
     ), notified AS (SELECT pg_notify('${OUTBOX_CHANNEL}', ''))
     SELECT id FROM emitted, notified ORDER BY id`,
    [events.map((e) => e.orgId), events.map((e) => e.type), events.map((e) => JSON.stringify(e.data))],
  );
  return rows.map((row) => row.id);
}
