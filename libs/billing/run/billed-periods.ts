import type { Queryable } from '../../db/index.js';
import { PostgresDailyTotalsAggregator } from '../../usage/index.js';
import type { BilledPeriod, LateUsageLine } from '../invoices/index.js';
import type { ProrationLine } from '../pricing/index.js';

/**
 * The SQL of what metered items' invoiced periods were billed (usage_billed_periods, migration
 * 019): written with each period's invoice, compared with what is counted by the next run (late
 * usage), a re-rate (drafts) and the read-back. docs/decisions.md "Late usage".
 */

const COLUMNS = `b.org_id, b.subscription_id, b.subscription_item_id, b.period_start, b.period_end, b.window_start,
  b.window_end, b.invoice_id, i.status AS invoice_status, b.period_quantity::text AS period_quantity,
  b.late_quantity::text AS late_quantity, b.included_units::text AS included_units, b.unit_price::text AS unit_price`;

type Row = Omit<BilledPeriod, 'org_id' | 'subscription_id' | 'subscription_item_id'> & {
  org_id: number | string;
  subscription_id: number | string;
  subscription_item_id: number | string;
};

function toBilled(row: Row): BilledPeriod {
  return {
    ...row,
    org_id: Number(row.org_id),
    subscription_id: Number(row.subscription_id),
    subscription_item_id: Number(row.subscription_item_id),
  };
}

/** Statuses of an invoice that was posted and stands: its periods' late usage goes on a later invoice. */
export const POSTED_STATUSES = ['POSTED', 'PARTIALLY_PAID', 'PAID', 'PARTIALLY_REFUNDED', 'REFUNDED'];

/**
 * The periods of these subscriptions whose counted usage may differ from what was billed (dirty)
 * and whose invoice is posted: the late usage a next invoice bills. `lock`: held until the caller
 * commits, taken before the counts are read (an insert into the period then waits for the commit
 * and marks the row again).
 */
export async function dirtyPostedPeriods(
  tx: Queryable,
  orgIds: readonly number[],
  subscriptionIds: readonly number[],
  options: { lock: boolean },
): Promise<BilledPeriod[]> {
  if (subscriptionIds.length === 0) return [];
  const { rows } = await tx.query<Row>(
    `SELECT ${COLUMNS}
       FROM usage_billed_periods b JOIN invoices i ON i.org_id = b.org_id AND i.id = b.invoice_id
      WHERE b.org_id = ANY($1::bigint[]) AND b.subscription_id = ANY($2::bigint[]) AND b.dirty
        AND i.status = ANY($3::text[])
      ORDER BY b.org_id, b.subscription_item_id, b.period_start
      ${options.lock ? 'FOR UPDATE OF b' : ''}`,
    [orgIds, subscriptionIds, POSTED_STATUSES],
  );
  return rows.map(toBilled);
}

/** The billed periods of one invoice (its metered items), locked when asked. */
export async function billedPeriodsOfInvoice(
  tx: Queryable,
  orgId: number,
  invoiceId: string,
  options: { lock: boolean },
): Promise<BilledPeriod[]> {
  const { rows } = await tx.query<Row>(
    `SELECT ${COLUMNS}
       FROM usage_billed_periods b JOIN invoices i ON i.org_id = b.org_id AND i.id = b.invoice_id
      WHERE b.org_id = $1 AND b.invoice_id = $2
      ORDER BY b.org_id, b.subscription_item_id, b.period_start
      ${options.lock ? 'FOR UPDATE OF b' : ''}`,
    [orgId, invoiceId],
  );
  return rows.map(toBilled);
}

/** The billed periods of these items that begin at `periodStart` (the read-back of a period). */
export async function billedPeriodsAt(
  tx: Queryable,
  orgId: number,
  itemIds: readonly number[],
  periodStart: Date,
): Promise<BilledPeriod[]> {
  if (itemIds.length === 0) return [];
  const { rows } = await tx.query<Row>(
    `SELECT ${COLUMNS}
       FROM usage_billed_periods b JOIN invoices i ON i.org_id = b.org_id AND i.id = b.invoice_id
      WHERE b.org_id = $1 AND b.subscription_item_id = ANY($2::bigint[]) AND b.period_start = $3`,
    [orgId, itemIds, periodStart],
  );
  return rows.map(toBilled);
}

/**
 * What Postgres counts now for each billed period's window (the source of truth: in the
 * distributed mode the sinks' other store may be behind or ahead of it). One aggregation call per
 * (organization, window), through the caller's transaction.
 */
export async function countBilledPeriods(
  tx: Queryable,
  periods: readonly BilledPeriod[],
): Promise<Map<BilledPeriod, string>> {
  const groups = new Map<string, BilledPeriod[]>();
  for (const period of periods) {
    const key = `${period.org_id}|${period.window_start.toISOString()}|${period.window_end.toISOString()}`;
    groups.set(key, [...(groups.get(key) ?? []), period]);
  }
  // the daily totals, kept exact in the statements that insert and void events (the same ones that
  // mark the billed periods): a period costs a row per day, not one per event
  const aggregator = new PostgresDailyTotalsAggregator(tx);
  const counted = new Map<BilledPeriod, string>();
  for (const group of groups.values()) {
    const first = group[0]!;
    const totals = await aggregator.totals(
      first.org_id,
      group.map((period) => period.subscription_item_id),
      first.window_start,
      first.window_end,
    );
    for (const period of group) counted.set(period, totals.get(period.subscription_item_id) ?? '0.00000000');
  }
  return counted;
}

export interface NewBilledPeriod {
  org_id: number;
  subscription_id: number;
  subscription_item_id: number;
  period_start: Date;
  period_end: Date;
  window_start: Date;
  window_end: Date;
  invoice_id: string;
  period_quantity: string;
  included_units: string;
  unit_price: string;
}

/**
 * What a new invoice billed of each metered item's period. Made dirty: whatever the run counted
 * from, the next comparison counts in Postgres, so an event written while the run read is never
 * missed.
 */
export async function insertBilledPeriods(tx: Queryable, periods: readonly NewBilledPeriod[]): Promise<void> {
  if (periods.length === 0) return;
  await tx.query(
    `INSERT INTO usage_billed_periods (org_id, subscription_id, subscription_item_id, period_start, period_end,
       window_start, window_end, invoice_id, period_quantity, included_units, unit_price, dirty)
     SELECT org_id, subscription_id, subscription_item_id, period_start, period_end, window_start, window_end,
            invoice_id, period_quantity, included_units, unit_price, true
       FROM jsonb_to_recordset($1::jsonb) AS x(org_id bigint, subscription_id bigint, subscription_item_id bigint,
            period_start timestamptz, period_end timestamptz, window_start timestamptz, window_end timestamptz,
            invoice_id uuid, period_quantity numeric, included_units numeric, unit_price numeric)
     ORDER BY org_id, subscription_item_id, period_start`,
    [JSON.stringify(periods)],
  );
}

/**
 * The late-usage lines an invoice carries, in its transaction: each billed period's late quantity
 * grows by the line's, and the comparison is done (dirty cleared) for every period `compared`.
 */
export async function recordLateBillings(
  tx: Queryable,
  lines: readonly { invoice_id: string; line: LateUsageLine }[],
  compared: readonly BilledPeriod[],
): Promise<void> {
  if (compared.length === 0) return;
  const late = new Map<BilledPeriod, string>(lines.map(({ line }) => [line.billed, line.late_quantity]));
  const rows = lines.map(({ invoice_id, line }) => ({
    org_id: line.billed.org_id,
    invoice_id,
    subscription_item_id: line.subscription_item_id,
    period_start: line.billed.period_start,
    period_end: line.billed.period_end,
    quantity: line.late_quantity,
    product_id: line.product_id,
    description: line.description,
    line_quantity: line.quantity,
    unit_price: line.unit_price,
    amount: line.amount,
  }));
  // one statement: the lines recorded, every compared period's late quantity grown and its mark cleared
  await tx.query(
    `WITH lines AS (
       INSERT INTO usage_late_billings (org_id, invoice_id, subscription_item_id, period_start, period_end, quantity,
         product_id, description, line_quantity, unit_price, amount)
       SELECT org_id, invoice_id, subscription_item_id, period_start, period_end, quantity, product_id, description,
              line_quantity, unit_price, amount
         FROM jsonb_to_recordset($1::jsonb) AS x(org_id bigint, invoice_id uuid, subscription_item_id bigint,
              period_start timestamptz, period_end timestamptz, quantity numeric, product_id bigint, description text,
              line_quantity numeric, unit_price numeric, amount numeric)
     )
     UPDATE usage_billed_periods b SET dirty = false, late_quantity = b.late_quantity + x.late
       FROM unnest($2::bigint[], $3::bigint[], $4::timestamptz[], $5::numeric[]) AS x(org_id, item, period_start, late)
      WHERE b.org_id = x.org_id AND b.subscription_item_id = x.item AND b.period_start = x.period_start`,
    [
      JSON.stringify(rows),
      compared.map((period) => period.org_id),
      compared.map((period) => period.subscription_item_id),
      compared.map((period) => period.period_start),
      compared.map((period) => late.get(period) ?? '0'),
    ],
  );
}

/** The late-usage lines an invoice carries, as composed (a re-rated draft keeps them). */
export async function lateLinesOfInvoice(
  tx: Queryable,
  orgId: number,
  invoiceId: string,
): Promise<ProrationLine[]> {
  const { rows } = await tx.query<{
    subscription_item_id: number | string;
    product_id: number | string;
    description: string;
    quantity: string;
    unit_price: string;
    amount: string;
    period_start: Date;
    period_end: Date;
  }>(
    `SELECT subscription_item_id, product_id, description, line_quantity::text AS quantity,
            unit_price::text AS unit_price, amount::text AS amount, period_start, period_end
       FROM usage_late_billings WHERE org_id = $1 AND invoice_id = $2
      ORDER BY subscription_item_id, period_start`,
    [orgId, invoiceId],
  );
  return rows.map((row) => ({
    ...row,
    subscription_item_id: Number(row.subscription_item_id),
    product_id: Number(row.product_id),
    period_start: row.period_start.toISOString(),
    period_end: row.period_end.toISOString(),
  }));
}

/** A draft re-rated: what its invoice now bills of each period, compared (dirty cleared). */
export async function rebilledPeriods(
  tx: Queryable,
  periods: readonly { period: BilledPeriod; quantity: string }[],
): Promise<void> {
  if (periods.length === 0) return;
  await tx.query(
    `UPDATE usage_billed_periods b SET period_quantity = x.quantity, dirty = false
       FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::numeric[]) AS x(org_id, item, period_start, quantity)
      WHERE b.org_id = x.org_id AND b.subscription_item_id = x.item AND b.period_start = x.period_start`,
    [
      periods.map(({ period }) => period.org_id),
      periods.map(({ period }) => period.subscription_item_id),
      periods.map(({ period }) => period.period_start),
      periods.map(({ quantity }) => quantity),
    ],
  );
}
