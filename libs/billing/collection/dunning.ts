import type { Queryable } from '../../db/index.js';

/**
 * Subscriptions follow their invoices (docs/architecture.md, "Rules of the contract"): an active subscription with an overdue invoice
 * becomes past_due; a past_due (or unpaid) one whose overdue invoices are all settled is active
 * again. Overdue is the spec's derived notion: POSTED or PARTIALLY_PAID, due date passed, balance
 * left. Both moves are listed in the subscription state machine.
 */

const HAS_OVERDUE_INVOICE = `EXISTS (
  SELECT 1 FROM invoices i
   WHERE i.org_id = s.org_id AND i.subscription_id = s.id
     AND i.status IN ('POSTED', 'PARTIALLY_PAID') AND i.due_date < $1::date AND i.total > i.amount_paid)`;

export interface DunningScope {
  orgId?: number | undefined;
  subscriptionIds?: readonly number[] | undefined;
}

/** `today` is YYYY-MM-DD (UTC): an invoice due today is not overdue yet. */
export async function applyDunning(
  tx: Queryable,
  today: string,
  scope: DunningScope = {},
): Promise<{ pastDue: number[]; restored: number[] }> {
  const values = [today, scope.orgId ?? null, scope.subscriptionIds ?? null];
  const inScope =
    '($2::bigint IS NULL OR s.org_id = $2) AND ($3::bigint[] IS NULL OR s.id = ANY($3::bigint[]))';
  const pastDue = await tx.query<{ id: number }>(
    `UPDATE subscriptions s SET status = 'past_due', updated_at = now()
      WHERE s.status = 'active' AND ${inScope} AND ${HAS_OVERDUE_INVOICE}
      RETURNING s.id`,
    values,
  );
  const restored = await tx.query<{ id: number }>(
    `UPDATE subscriptions s SET status = 'active', updated_at = now()
      WHERE s.status IN ('past_due', 'unpaid') AND ${inScope} AND NOT ${HAS_OVERDUE_INVOICE}
      RETURNING s.id`,
    values,
  );
  return { pastDue: pastDue.rows.map((r) => r.id), restored: restored.rows.map((r) => r.id) };
}

/**
 * Only the way back: after a payment, credit memo or withdrawal nothing new can be overdue, so a
 * past_due (or unpaid) subscription whose overdue invoices are all settled becomes active again.
 */
export async function restoreIfSettled(
  tx: Queryable,
  today: string,
  orgId: number,
  /** null: an invoice of no subscription (Prepaid credits) makes nothing past due. */
  subscriptionId: number | null,
): Promise<boolean> {
  if (subscriptionId === null) return false;
  const { rowCount } = await tx.query(
    `UPDATE subscriptions s SET status = 'active', updated_at = now()
      WHERE s.org_id = $2 AND s.id = $3 AND s.status IN ('past_due', 'unpaid') AND NOT ${HAS_OVERDUE_INVOICE}`,
    [today, orgId, subscriptionId],
  );
  return (rowCount ?? 0) > 0;
}
