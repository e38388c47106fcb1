import { Batcher } from '../batching/index.js';
import type { Queryable } from '../db/index.js';

export type CountedList = 'invoices' | 'subscriptions' | 'customers';

/** One list of one organization, optionally of one customer and/or one status. */
export interface ListTotalKey {
  orgId: number;
  list: CountedList;
  customerId?: number | undefined;
  status?: string | undefined;
}

/**
 * The number of rows of an organization's list, optionally of one customer and/or one status,
 * read from list_totals (kept by triggers, migration 003_list_totals) instead of counted: one
 * primary-key read however long the list. Inside a transaction that changed the list, its own
 * changes not yet folded in (that happens at commit) are added, so it reads its own writes.
 */
export async function listTotal(db: Queryable, key: ListTotalKey): Promise<number> {
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

/**
 * listTotal for reads through the pool (outside any transaction, so no pending changes of its
 * own to add), with every total asked for in one turn of the event loop read in ONE query:
 * under load, concurrent list requests share the round trip instead of paying one each.
 */
export class ListTotalReader {
  private readonly reads: Batcher<ListTotalKey, number>;

  constructor(private readonly db: Queryable) {
    this.reads = new Batcher((keys) => this.readMany(keys), { lingerMs: 0, maxWeight: 500 });
  }

  total(key: ListTotalKey): Promise<number> {
    return this.reads.submit(key);
  }

  private async readMany(keys: ListTotalKey[]): Promise<number[]> {
    const { rows } = await this.db.query<{ total: number }>(
      `SELECT COALESCE(t.total, 0)::bigint AS total
         FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY
              AS k (org_id, list, customer_id, status, n)
         LEFT JOIN list_totals t USING (org_id, list, customer_id, status)
        ORDER BY k.n`,
      [
        keys.map((key) => key.orgId),
        keys.map((key) => key.list),
        keys.map((key) => key.customerId ?? 0),
        keys.map((key) => key.status ?? ''),
      ],
    );
    return rows.map((row) => row.total);
  }
}
