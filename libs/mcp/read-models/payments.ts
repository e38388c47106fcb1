import type { Queryable } from '../../db/index.js';
import type { TransactionMethod, TransactionStatus } from '../../schemas/index.js';

export interface RecentPayment {
  id: string;
  invoice_id: string;
  invoice_number: string;
  customer_id: number;
  customer_name: string;
  amount: string;
  currency: string;
  method: TransactionMethod;
  status: TransactionStatus;
  reference: string | null;
  created_at: string;
}

/** PAYMENT transactions across all invoices, newest first (credit memos and refunds are not payments). */
export async function recentPayments(db: Queryable, orgId: number, limit: number): Promise<RecentPayment[]> {
  const { rows } = await db.query<Omit<RecentPayment, 'created_at'> & { created_at: Date }>(
    `SELECT t.id, t.invoice_id, i.invoice_number, i.customer_id, c.name AS customer_name, t.amount, i.currency,
            t.method, t.status, t.reference, t.created_at
       FROM invoice_transactions t
       JOIN invoices i ON i.org_id = t.org_id AND i.id = t.invoice_id
       JOIN customers c ON c.org_id = i.org_id AND c.id = i.customer_id
      WHERE t.org_id = $1 AND t.type = 'PAYMENT'
      ORDER BY t.created_at DESC, t.id DESC
      LIMIT $2`,
    [orgId, limit],
  );
  return rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() }));
}
