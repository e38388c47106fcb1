import type { Queryable } from '../../db/index.js';
import type { SubscriptionStatus } from '../../schemas/index.js';

export interface OpenInvoicesByCurrency {
  currency: string;
  count: number;
  /** Sum of total - amount_paid, exact. */
  balance: string;
  overdue_count: number;
}

export interface CustomerActivity {
  open_invoices: { count: number; by_currency: OpenInvoicesByCurrency[] };
  subscriptions: { total: number; by_status: Partial<Record<SubscriptionStatus, number>> };
}

/**
 * What a customer owes and has running. Open invoices are those still collectible (POSTED or
 * PARTIALLY_PAID); overdue is the spec's derivation: open, due date before `asOf`, balance > 0.
 */
export async function customerActivity(
  db: Queryable,
  orgId: number,
  customerId: number,
  asOf: string,
): Promise<CustomerActivity> {
  const invoices = await db.query<OpenInvoicesByCurrency>(
    `SELECT currency, count(*) AS count, sum(total - amount_paid)::numeric(38, 8) AS balance,
            count(*) FILTER (WHERE due_date < $3::date AND total - amount_paid > 0) AS overdue_count
       FROM invoices
      WHERE org_id = $1 AND customer_id = $2 AND status IN ('POSTED', 'PARTIALLY_PAID')
      GROUP BY currency ORDER BY currency`,
    [orgId, customerId, asOf],
  );
  const subscriptions = await db.query<{ status: SubscriptionStatus; count: number }>(
    `SELECT status, count(*) AS count FROM subscriptions
      WHERE org_id = $1 AND customer_id = $2 GROUP BY status ORDER BY status`,
    [orgId, customerId],
  );
  return {
    open_invoices: {
      count: invoices.rows.reduce((sum, row) => sum + row.count, 0),
      by_currency: invoices.rows,
    },
    subscriptions: {
      total: subscriptions.rows.reduce((sum, row) => sum + row.count, 0),
      by_status: Object.fromEntries(subscriptions.rows.map((row) => [row.status, row.count])),
    },
  };
}
