import type { Queryable } from '../../db/index.js';
import type { SubscriptionStatus } from '../../schemas/index.js';
import type { BillableItem, PriceTier } from '../pricing/index.js';
import type { SubscriptionSchedule } from './schedule.js';
import { BILLABLE_STATUSES } from './schedule.js';

/**
 * The SQL of a billing run batch. Rows of several organizations may share a batch (a run over all
 * organizations); every join and every write still matches on org_id, so nothing crosses tenants.
 * Multi-row writes go through jsonb_to_recordset: one round trip per table per batch.
 */

export interface DueSubscription extends SubscriptionSchedule {
  org_id: number;
  customer_id: number;
  currency: string;
}

/**
 * Claims up to `limit` due subscriptions for this transaction. SKIP LOCKED lets concurrent runs
 * share the work without waiting on each other; the lock is held until the batch commits, and the
 * row's next_billing_date moves past `now` in that commit, so no two runs bill one period.
 */
export async function claimDueSubscriptions(
  tx: Queryable,
  filter: {
    now: Date;
    orgId?: number | undefined;
    subscriptionIds?: readonly number[] | undefined;
    exclude: number[];
  },
  limit: number,
): Promise<DueSubscription[]> {
  const { rows } = await tx.query<DueSubscription>(
    `SELECT id, org_id, customer_id, status, currency, start_date, trial_end_date, billing_period, billing_anchor_day,
            current_period_start, current_period_end, next_billing_date, term_type, initial_term_months, auto_renew,
            subscription_end_date, cancel_at_period_end, ended_at
       FROM subscriptions
      WHERE status = ANY($1::text[]) AND next_billing_date <= $2 AND billing_parked_at IS NULL
        AND ($3::bigint IS NULL OR org_id = $3)
        AND ($4::bigint[] IS NULL OR id = ANY($4::bigint[]))
        AND NOT (id = ANY($5::bigint[]))
      ORDER BY next_billing_date, id
      LIMIT $6
      FOR NO KEY UPDATE SKIP LOCKED`,
    [
      BILLABLE_STATUSES,
      filter.now,
      filter.orgId ?? null,
      filter.subscriptionIds ?? null,
      filter.exclude,
      limit,
    ],
  );
  return rows;
}

/** One subscription as a billing run reads it, without claiming it (the usage read-back). */
export async function loadSubscriptionSchedule(
  db: Queryable,
  orgId: number,
  subscriptionId: number,
): Promise<DueSubscription | undefined> {
  const { rows } = await db.query<DueSubscription>(
    `SELECT id, org_id, customer_id, status, currency, start_date, trial_end_date, billing_period, billing_anchor_day,
            current_period_start, current_period_end, next_billing_date, term_type, initial_term_months, auto_renew,
            subscription_end_date, cancel_at_period_end, ended_at
       FROM subscriptions
      WHERE org_id = $1 AND id = $2`,
    [orgId, subscriptionId],
  );
  return rows[0];
}

/** A billable item as the database gives it: rows give Dates, json_agg gives their text. */
export interface BillableItemRow {
  subscription_id: number;
  subscription_item_id: number;
  product_id: number;
  quantity: number;
  unit_price: string;
  usage_type: 'licensed' | 'metered';
  included_units: string;
  product_name: string;
  unit_label: string;
  currency: string;
  pricing_type: BillableItem['pricing_type'];
  pricing_model: BillableItem['pricing']['pricing_model'];
  pricing_scheme: BillableItem['pricing']['pricing_scheme'];
  pricing_mode: BillableItem['pricing']['pricing_mode'];
  org_id: number;
  started_at: Date | string | null;
  removed_at: Date | string | null;
  base_period_start: Date | string | null;
  base_quantity: number | null;
  base_unit_price: string | null;
  base_included_units: string | null;
}

/**
 * The SELECT of billable items, `si`, under `where`: the items billed for the running period or
 * later, so an item removed by a change since the running period began is still there (with its
 * `removed_at`) until that period is invoiced. `subscription` names a subscriptions row the
 * statement already has (the items' own); without it the items' subscriptions are joined. Numerics
 * are cast to text, which is how pg gives them anyway, so that they stay exact in json_agg too.
 */
export function billableItemsSql(where: string, subscription?: string): string {
  const s = subscription ?? 'item_s';
  return `SELECT si.subscription_id, si.id AS subscription_item_id, si.product_id, si.quantity,
            si.unit_price::text AS unit_price, si.usage_type, si.included_units::text AS included_units,
            p.name AS product_name, p.unit_label, p.currency, p.pricing_type, p.pricing_model, p.pricing_scheme,
            p.pricing_mode, si.org_id, si.started_at, si.removed_at, si.base_period_start, si.base_quantity,
            si.base_unit_price::text AS base_unit_price, si.base_included_units::text AS base_included_units
       FROM subscription_items si
       JOIN products p ON p.org_id = si.org_id AND p.id = si.product_id
       ${subscription ? '' : 'JOIN subscriptions item_s ON item_s.org_id = si.org_id AND item_s.id = si.subscription_id'}
      WHERE (${where}) AND (si.removed_at IS NULL OR si.removed_at > ${s}.current_period_start)`;
}

export function toBillableItem(row: BillableItemRow, tiers: readonly PriceTier[]): BillableItem {
  const date = (value: Date | string | null) => (value === null ? null : new Date(value));
  return {
    subscription_item_id: row.subscription_item_id,
    product_id: row.product_id,
    product_name: row.product_name,
    unit_label: row.unit_label,
    currency: row.currency.trim(),
    pricing_type: row.pricing_type,
    usage_type: row.usage_type,
    quantity: row.quantity,
    unit_price: row.unit_price,
    included_units: row.included_units,
    pricing: {
      pricing_model: row.pricing_model,
      pricing_scheme: row.pricing_scheme,
      pricing_mode: row.pricing_mode,
      tiers: [...tiers],
    },
    started_at: date(row.started_at),
    removed_at: date(row.removed_at),
    base:
      row.base_period_start === null
        ? null
        : {
            period_start: date(row.base_period_start)!,
            quantity: row.base_quantity!,
            unit_price: row.base_unit_price!,
            included_units: row.base_included_units!,
          },
  };
}

/** Items of the given subscriptions with their products' prices and tiers, grouped by subscription. */
export async function loadBillableItems(
  tx: Queryable,
  orgIds: number[],
  subscriptionIds: number[],
): Promise<Map<number, BillableItem[]>> {
  const { rows } = await tx.query<BillableItemRow>(
    `${billableItemsSql('si.org_id = ANY($1::bigint[]) AND si.subscription_id = ANY($2::bigint[])')}
      ORDER BY si.subscription_id, si.id`,
    [orgIds, subscriptionIds],
  );
  const tiered = [...new Set(rows.filter((r) => r.pricing_scheme === 'tiered').map((r) => r.product_id))];
  const tiers = await loadTiers(tx, orgIds, tiered);
  const grouped = new Map<number, BillableItem[]>(subscriptionIds.map((id) => [id, []]));
  for (const row of rows) {
    grouped.get(row.subscription_id)?.push(toBillableItem(row, tiers.get(row.product_id) ?? []));
  }
  return grouped;
}

async function loadTiers(
  tx: Queryable,
  orgIds: number[],
  productIds: number[],
): Promise<Map<number, PriceTier[]>> {
  const tiers = new Map<number, PriceTier[]>();
  if (productIds.length === 0) return tiers;
  const { rows } = await tx.query<PriceTier & { product_id: number }>(
    `SELECT product_id, up_to, unit_price, flat_fee FROM product_price_tiers
      WHERE org_id = ANY($1::bigint[]) AND product_id = ANY($2::bigint[])
      ORDER BY product_id, position`,
    [orgIds, productIds],
  );
  for (const { product_id, ...tier } of rows) {
    const list = tiers.get(product_id) ?? [];
    list.push(tier);
    tiers.set(product_id, list);
  }
  return tiers;
}

export interface BillingCustomer {
  id: number;
  org_id: number;
  country: string;
  state_province: string | null;
  tax_exempt: boolean;
}

/**
 * The customers being invoiced. When posting, their rows are locked (in id order, the one order
 * every path uses) because posting uses their credit grants (libs/billing/credits: every change of
 * a customer's grants holds the customer's row first). NO KEY UPDATE leaves foreign-key
 * checks of other writers unblocked.
 */
export async function loadCustomers(
  tx: Queryable,
  orgIds: number[],
  customerIds: number[],
  options: { lock: boolean },
): Promise<Map<number, BillingCustomer>> {
  const { rows } = await tx.query<BillingCustomer>(
    `SELECT id, org_id, country, state_province, tax_exempt FROM customers
      WHERE org_id = ANY($1::bigint[]) AND id = ANY($2::bigint[])
      ORDER BY id ${options.lock ? 'FOR NO KEY UPDATE' : ''}`,
    [orgIds, customerIds],
  );
  return new Map(rows.map((row) => [row.id, { ...row, country: row.country.trim() }]));
}

export interface SubscriptionUpdate {
  id: number;
  org_id: number;
  status: SubscriptionStatus;
  current_period_start: Date;
  current_period_end: Date;
  next_billing_date: Date;
  subscription_end_date: Date | null;
  ended_at: Date | null;
}

export async function updateSubscriptions(
  tx: Queryable,
  updates: readonly SubscriptionUpdate[],
): Promise<void> {
  if (updates.length === 0) return;
  await tx.query(
    `UPDATE subscriptions s
        SET status = x.status, current_period_start = x.current_period_start,
            current_period_end = x.current_period_end, next_billing_date = x.next_billing_date,
            subscription_end_date = x.subscription_end_date, ended_at = x.ended_at, updated_at = now()
       FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, org_id bigint, status text,
            current_period_start timestamptz, current_period_end timestamptz, next_billing_date timestamptz,
            subscription_end_date timestamptz, ended_at timestamptz)
      WHERE s.org_id = x.org_id AND s.id = x.id`,
    [JSON.stringify(updates)],
  );
}

/** Sets a subscription aside from billing runs until an operator unparks or cancels it. */
export async function parkSubscription(tx: Queryable, subscriptionId: number, reason: string): Promise<void> {
  await tx.query(
    `UPDATE subscriptions SET billing_parked_at = now(), billing_parked_reason = $2, updated_at = now()
      WHERE id = $1 AND billing_parked_at IS NULL`,
    [subscriptionId, reason],
  );
}

export interface ParkedSubscription {
  subscription_id: number;
  parked_at: string;
  reason: string;
}

/** The parked subscriptions a run's operator must hear of (all, or one organization's, or some). */
export async function parkedSubscriptions(
  tx: Queryable,
  filter: { orgId?: number | undefined; subscriptionIds?: readonly number[] | undefined },
): Promise<ParkedSubscription[]> {
  const { rows } = await tx.query<{ subscription_id: number; parked_at: Date; reason: string }>(
    `SELECT id AS subscription_id, billing_parked_at AS parked_at, billing_parked_reason AS reason
       FROM subscriptions
      WHERE billing_parked_at IS NOT NULL AND status <> 'canceled'
        AND ($1::bigint IS NULL OR org_id = $1)
        AND ($2::bigint[] IS NULL OR id = ANY($2::bigint[]))
      ORDER BY billing_parked_at, id`,
    [filter.orgId ?? null, filter.subscriptionIds ?? null],
  );
  return rows.map((row) => ({ ...row, parked_at: row.parked_at.toISOString() }));
}

/** Proration lines now on an invoice: never carried by another one. */
export async function markProrationLinesInvoiced(
  tx: Queryable,
  assignments: readonly { id: number; invoice_id: string }[],
): Promise<void> {
  if (assignments.length === 0) return;
  await tx.query(
    `UPDATE subscription_proration_lines l SET invoice_id = x.invoice_id
       FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, invoice_id uuid)
      WHERE l.id = x.id AND l.invoice_id IS NULL`,
    [JSON.stringify(assignments)],
  );
}

export interface DueChange {
  subscription_id: number;
  org_id: number;
  items: { id: number | null; product_id: number; quantity: number; included_units: string }[];
  effective_at: Date;
}

/** Scheduled changes of these subscriptions whose moment has come by `boundary`, locked rows' own. */
export async function takeDueChanges(
  tx: Queryable,
  due: readonly { id: number; org_id: number; boundary: string }[],
): Promise<DueChange[]> {
  if (due.length === 0) return [];
  const { rows } = await tx.query<DueChange>(
    `DELETE FROM subscription_pending_changes c
      USING jsonb_to_recordset($1::jsonb) AS x(id bigint, org_id bigint, boundary timestamptz)
      WHERE c.org_id = x.org_id AND c.subscription_id = x.id AND c.effective_at <= x.boundary
      RETURNING c.subscription_id, c.org_id, c.items, c.effective_at`,
    [JSON.stringify(due)],
  );
  return rows;
}
