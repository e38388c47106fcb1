import type { Queryable } from '../db/index.js';

export type CountedList = 'invoices' | 'subscriptions' | 'customers';

/**
 * The number of rows of an organization's list, optionally of one customer and/or one status,
 * read from list_totals (kept by triggers, migration 003_list_totals) instead of counted: one
 * primary-key read however long the list. Inside a transaction that changed the list, its own
 * changes not yet folded in (that happens at commit) are added, so it reads its own writes.
 */
export async function listTotal(
  db: Queryable,
  key: { orgId: number; list: CountedList; customerId?: number | undefined; status?: string | undefined },
): Promise<number> {
  const { rows } = await db.query<{ total: number }>(
    `SELECT (COALESCE((SELECT total FROM list_totals
                        WHERE org_id = $1 AND list = $2 AND customer_id = $3 AND status = $4), 0)
           + COALESCE((SELECT sum(delta) FROM list_total_changes
                        WHERE txid = txid_current_if_assigned()
                          AND org_id = $1 AND list = $2 AND customer_id = $3 AND status = $4), 0))::bigint AS total`,
    [key.orgId, key.list, key.customerId ?? 0, key.status ?? ''],
  );
  return rows[0]!.total;
}
