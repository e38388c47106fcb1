import { afterCommit, type Database, type Queryable } from '../db/index.js';
import type { EmittedEventType } from '../schemas/index.js';

export interface DomainEvent {
  orgId: number;
  type: EmittedEventType;
  /** The webhook payload's `data` (docs/architecture.md, "Rules of the contract": event payloads). */
  data: Record<string, unknown>;
}

export const OUTBOX_CHANNEL = 'outbox';

/**
 * Records a domain event in the outbox. Call it with the transaction that makes the change: the
 * event then exists exactly when the change does (never for a rollback, never lost on a crash).
 * The dispatcher is woken by a NOTIFY sent after the commit (see wakeDispatcherAfterCommit); it
 * also polls, so a wake-up lost to a crash only delays delivery.
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
  const values: unknown[] = [];
  const insert = outboxInsert(events, (value) => `$${values.push(value)}`);
  const { rows } = await tx.query<{ id: number }>(
    `WITH emitted AS (${insert} RETURNING id) SELECT id FROM emitted ORDER BY id`,
    values,
  );
  await wakeDispatcherAfterCommit(tx);
  return rows.map((row) => row.id);
}

/**
 * The INSERT of `events` into the outbox, for a statement that writes changes and their events at
 * once (a CTE; the caller then calls wakeDispatcherAfterCommit). `param` numbers a value. `gate`
 * gives each event a key (`e.gate`) and a condition on it: an event is inserted when it holds.
 */
export function outboxInsert(
  events: readonly DomainEvent[],
  param: (value: unknown) => string,
  gate?: { keys: readonly number[]; onlyIf: string },
): string {
  const orgIds = param(events.map((e) => e.orgId));
  const types = param(events.map((e) => e.type));
  const data = param(events.map((e) => JSON.stringify(e.data)));
  const keys = param(gate?.keys ?? events.map(() => null));
  return `INSERT INTO outbox (org_id, event_type, data)
          SELECT org_id, event_type, data::jsonb
            FROM unnest(${orgIds}::bigint[], ${types}::text[], ${data}::text[], ${keys}::bigint[])
                 WITH ORDINALITY AS e(org_id, event_type, data, gate, n)
           WHERE ${gate?.onlyIf ?? 'true'}
           ORDER BY n`;
}

const notifyOutbox = (db: Database) => db.notify(OUTBOX_CHANNEL);

/**
 * Wakes the dispatcher once the outbox rows written through `tx` are committed. NOTIFY waits for
 * the commit: one sent inside the writing transaction would serialize every such commit on
 * Postgres's notification lock. A client of unknown origin notifies in its transaction, as before.
 */
export async function wakeDispatcherAfterCommit(tx: Queryable): Promise<void> {
  if (!afterCommit(tx, notifyOutbox)) await tx.query(`SELECT pg_notify('${OUTBOX_CHANNEL}', '')`);
}
