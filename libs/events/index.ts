import type { Queryable } from '../db/index.js';
import type { EmittedEventType } from '../schemas/index.js';

export interface DomainEvent {
  orgId: number;
  type: EmittedEventType;
  /** The webhook payload's `data` (DESIGN §6 "Event payload data"). */
  data: Record<string, unknown>;
}

/**
 * Records a domain event in the outbox. Call it with the transaction that makes the change: the
 * event then exists exactly when the change does (never for a rollback, never lost on a crash).
 * The NOTIFY is delivered at commit and only wakes the dispatcher early; it also polls.
 */
export async function emitDomainEvent(tx: Queryable, event: DomainEvent): Promise<number> {
  const { rows } = await tx.query<{ id: number }>(
    'INSERT INTO outbox (org_id, event_type, data) VALUES ($1, $2, $3) RETURNING id',
    [event.orgId, event.type, JSON.stringify(event.data)],
  );
  await tx.query("SELECT pg_notify('outbox', '')");
  return rows[0]!.id;
}

export const OUTBOX_CHANNEL = 'outbox';
