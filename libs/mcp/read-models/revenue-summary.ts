import type { Queryable } from '../../db/index.js';
import { formatMoney, isBillableCurrency, parseMoney, roundToMinorUnit } from '../../money/index.js';

export interface RevenueByCurrency {
  currency: string;
  invoice_count: number;
  billed: string;
  tax: string;
  paid: string;
  refunded: string;
  outstanding: string;
  overdue_count: number;
  overdue_amount: string;
  active_subscriptions: number;
}

export interface RevenueSummary {
  from: string | null;
  to: string | null;
  as_of: string;
  active_subscriptions: number;
  by_currency: RevenueByCurrency[];
}

const ZERO = '0.00000000';

/**
 * Totals over the invoices issued in [from, to] (by invoice_date; either bound may be open).
 * Issued means neither DRAFT nor WITHDRAWN. `paid` and `outstanding` are those invoices' state
 * now; overdue follows the spec: POSTED or PARTIALLY_PAID, due date before `asOf`, balance > 0.
 * Sums stay NUMERIC in SQL and reach us as exact text; money never goes through a float. Each is
 * reported in the currency's minor unit by the rounding every invoice amount goes through (a no-op
 * for invoices made since amounts are payable; a sum of older sub-cent amounts is rounded once).
 */
export async function revenueSummary(
  db: Queryable,
  orgId: number,
  range: { from?: string | undefined; to?: string | undefined; asOf: string },
): Promise<RevenueSummary> {
  const invoices = await db.query<Omit<RevenueByCurrency, 'active_subscriptions'>>(
    `WITH issued AS (
       SELECT currency, total, tax_amount, amount_paid, amount_refunded, total - amount_paid AS balance,
              status IN ('POSTED', 'PARTIALLY_PAID') AND total - amount_paid > 0 AS open,
              due_date
         FROM invoices
        WHERE org_id = $1 AND status NOT IN ('DRAFT', 'WITHDRAWN')
          AND ($2::date IS NULL OR invoice_date >= $2::date)
          AND ($3::date IS NULL OR invoice_date <= $3::date)
     )
     SELECT currency,
            count(*) AS invoice_count,
            sum(total)::numeric(38, 8) AS billed,
            sum(tax_amount)::numeric(38, 8) AS tax,
            sum(amount_paid)::numeric(38, 8) AS paid,
            sum(amount_refunded)::numeric(38, 8) AS refunded,
            coalesce(sum(balance) FILTER (WHERE open), 0)::numeric(38, 8) AS outstanding,
            count(*) FILTER (WHERE open AND due_date < $4::date) AS overdue_count,
            coalesce(sum(balance) FILTER (WHERE open AND due_date < $4::date), 0)::numeric(38, 8) AS overdue_amount
       FROM issued GROUP BY currency ORDER BY currency`,
    [orgId, range.from ?? null, range.to ?? null, range.asOf],
  );
  const subscriptions = await db.query<{ currency: string; count: number }>(
    `SELECT currency, count(*) AS count FROM subscriptions
      WHERE org_id = $1 AND status = 'active' GROUP BY currency ORDER BY currency`,
    [orgId],
  );
  const activeByCurrency = new Map(subscriptions.rows.map((row) => [row.currency, row.count]));
  // a currency without a known minor unit (rows stored before currencies were checked) sums as is
  const payable = (amount: string, currency: string) =>
    isBillableCurrency(currency.trim())
      ? formatMoney(roundToMinorUnit(parseMoney(amount), currency.trim()))
      : formatMoney(parseMoney(amount));
  const byCurrency: RevenueByCurrency[] = invoices.rows.map((row) => ({
    ...row,
    billed: payable(row.billed, row.currency),
    tax: payable(row.tax, row.currency),
    paid: payable(row.paid, row.currency),
    refunded: payable(row.refunded, row.currency),
    outstanding: payable(row.outstanding, row.currency),
    overdue_amount: payable(row.overdue_amount, row.currency),
    active_subscriptions: activeByCurrency.get(row.currency) ?? 0,
  }));
  for (const [currency, count] of activeByCurrency) {
    if (byCurrency.some((row) => row.currency === currency)) continue;
    byCurrency.push({
      currency,
      invoice_count: 0,
      billed: ZERO,
      tax: ZERO,
      paid: ZERO,
      refunded: ZERO,
      outstanding: ZERO,
      overdue_count: 0,
      overdue_amount: ZERO,
      active_subscriptions: count,
    });
  }
  byCurrency.sort((a, b) => a.currency.localeCompare(b.currency));
  return {
    from: range.from ?? null,
    to: range.to ?? null,
    as_of: range.asOf,
    active_subscriptions: subscriptions.rows.reduce((sum, row) => sum + row.count, 0),
    by_currency: byCurrency,
  };
}
