import type { Database, Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import type { UsageEventWithStatus } from '../../schemas/index.js';
import type { UsageReadStores } from '../aggregation/read-stores.js';
import { SUBTRACT_VOIDED } from '../sinks/postgres.js';
import {
  appendVoid,
  type EventRow,
  findEvent,
  toPublic,
  toRecord,
  VOID_CATCH_UP_MS,
} from './usage-events.js';

/**
 * A void that another lib corrects in the same transaction: billing voids an event of an
 * invoiced period together with the credit note that gives back what it charged (docs/decisions.md,
 * "Corrections are priced by the difference"). Usage knows no price: `correct` does the rest and
 * may refuse (its ApiError rolls the void back). Kept apart from voidUsageEvent, whose 409 for an
 * invoiced period stands for a plain void.
 */

export interface VoidingEvent {
  id: string;
  org_id: number;
  subscription_item_id: number;
  quantity: string;
  occurred_at: Date;
}

export interface VoidCorrection<T> {
  /** The event is being voided now: what corrects it (run before the void is logged). */
  fresh(tx: Queryable, event: VoidingEvent): Promise<T>;
  /** The event was voided before: what corrected it then (a repeated call). */
  already(tx: Queryable, event: VoidingEvent): Promise<T>;
}

export async function voidUsageEventWith<T>(
  db: Database,
  stores: UsageReadStores,
  orgId: number,
  id: string,
  correction: VoidCorrection<T>,
  now: () => Date = () => new Date(),
): Promise<{ event: UsageEventWithStatus; correction: T }> {
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
  return db.transaction(async (tx) => {
    const row: EventRow = (await findEvent(tx, orgId, id, true))!;
    const event: VoidingEvent = {
      id: row.id,
      org_id: Number(row.org_id),
      subscription_item_id: Number(row.subscription_item_id),
      quantity: row.quantity,
      occurred_at: row.occurred_at,
    };
    if (row.voided_at) return { event: toPublic(row), correction: await correction.already(tx, event) };
    const made = await correction.fresh(tx, event);
    const voidedAt = now();
    await appendVoid(stores, { event: toRecord(row), voidedAtMs: voidedAt.getTime() });
    await tx.query(
      `WITH voided AS (
         UPDATE usage_events SET voided_at = $3 WHERE org_id = $1 AND id = $2 AND voided_at IS NULL
         RETURNING org_id, subscription_item_id, occurred_at, quantity
       )
       ${SUBTRACT_VOIDED}`,
      [orgId, row.id, voidedAt],
    );
    return { event: toPublic({ ...row, voided_at: voidedAt }), correction: made };
  });
}
