import type { Queryable } from '../../db/index.js';
import type { SubscriptionStatus } from '../../schemas/index.js';
import type { BilledTerms } from '../invoices/index.js';
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

/** The columns of a DueSubscription, as every query here reads them. */
const DUE_SUBSCRIPTION_COLUMNS = `id, org_id, customer_id, status, currency, start_date, trial_end_date, billing_period,
  billing_anchor_day, current_period_start, current_period_end, next_billing_date, term_type, initial_term_months,
  auto_renew, subscription_end_date, cancel_at_period_end, ended_at`;

/**
 * Claims up to `limit` due subscriptions for this transaction: billable ones whose period ended,
 * and any with a period to bill again (a withdrawn draft's, whatever the subscription's status
 * since: a subscription that ended still owes the periods it ran). SKIP LOCKED lets concurrent runs
 * share the work without waiting on each other; the lock is held until the batch commits, and the
 * row's next_billing_date moves past `now` in that commit, so no two runs bill one period.
 * A customer's subscriptions due together are claimed together (customer_id before id): their
 * invoices burn down the customer's grants in one plan, each grant written once per batch, and the
 * customer is held once.
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
    `SELECT ${DUE_SUBSCRIPTION_COLUMNS}
       FROM subscriptions s
      WHERE billing_parked_at IS NULL
        AND ((status = ANY($1::text[]) AND next_billing_date <= $2) OR EXISTS (
              SELECT 1 FROM subscription_rebill_periods r WHERE r.org_id = s.org_id AND r.subscription_id = s.id))
        AND ($3::bigint IS NULL OR org_id = $3)
        AND ($4::bigint[] IS NULL OR id = ANY($4::bigint[]))
        AND NOT (id = ANY($5::bigint[]))
      ORDER BY next_billing_date, customer_id, id
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

/**
 * Claims up to `limit` ended subscriptions (canceled, expired) with an invoiced period whose
 * counted usage may differ from what it billed: no next invoice of theirs will compare it, so the
 * run does (docs/decisions.md "Late usage of an ended subscription"). Same locks as
 * claimDueSubscriptions; `postedStatuses`: the invoice statuses whose periods late usage follows.
 */
export async function claimEndedWithLateUsage(
  tx: Queryable,
  filter: {
    orgId?: number | undefined;
    subscriptionIds?: readonly number[] | undefined;
    exclude: number[];
    /** The run's day: a subscription with an invoice of its own dated that day waits for the next. */
    day: string;
  },
  postedStatuses: readonly string[],
  limit: number,
): Promise<DueSubscription[]> {
  const { rows } = await tx.query<DueSubscription>(
    `SELECT ${DUE_SUBSCRIPTION_COLUMNS}
       FROM subscriptions s
      WHERE NOT (status = ANY($1::text[])) AND billing_parked_at IS NULL
        AND EXISTS (
              SELECT 1 FROM usage_billed_periods b JOIN invoices i ON i.org_id = b.org_id AND i.id = b.invoice_id
               WHERE b.org_id = s.org_id AND b.subscription_id = s.id AND b.dirty AND i.status = ANY($2::text[]))
        AND NOT EXISTS (
              SELECT 1 FROM invoices d
               WHERE d.subscription_id = s.id AND d.period_start = $7::date
                 AND (d.status <> 'WITHDRAWN' OR d.posted_at IS NOT NULL))
        AND ($3::bigint IS NULL OR org_id = $3)
        AND ($4::bigint[] IS NULL OR id = ANY($4::bigint[]))
        AND NOT (id = ANY($5::bigint[]))
      ORDER BY id
      LIMIT $6
      FOR NO KEY UPDATE SKIP LOCKED`,
    [
      BILLABLE_STATUSES,
      postedStatuses,
      filter.orgId ?? null,
      filter.subscriptionIds ?? null,
      filter.exclude,
      limit,
      filter.day,
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
  return (await loadSubscriptionSchedules(db, [{ orgId, subscriptionId }]))[0];
}

/** Several subscriptions as loadSubscriptionSchedule reads one, in one query; missing ones are absent. */
export async function loadSubscriptionSchedules(
  db: Queryable,
  keys: readonly { orgId: number; subscriptionId: number }[],
): Promise<DueSubscription[]> {
  const { rows } = await db.query<DueSubscription>(
    `SELECT ${DUE_SUBSCRIPTION_COLUMNS}
       FROM subscriptions
      WHERE (org_id, id) IN (SELECT * FROM unnest($1::bigint[], $2::bigint[]))`,
    [keys.map((key) => key.orgId), keys.map((key) => key.subscriptionId)],
  );
  return rows;
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
  items: {
    id: number | null;
    product_id: number;
    quantity: number;
    included_units: string;
    /** Absent: none (a change scheduled before migration 017 had none either). */
    usage_limit?: string;
  }[];
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

/**
 * Periods of these subscriptions whose only invoice was a draft withdrawn before it was posted:
 * taken (deleted) by the batch that bills them again.
 */
export async function takeRebillPeriods(
  tx: Queryable,
  subscriptions: readonly { id: number; org_id: number }[],
): Promise<
  {
    subscription_id: number;
    period_start: Date;
    period_end: Date;
    first_period: boolean;
    billed_terms: BilledTerms | null;
  }[]
> {
  if (subscriptions.length === 0) return [];
  const { rows } = await tx.query<{
    subscription_id: number | string;
    period_start: Date;
    period_end: Date;
    first_period: boolean;
    billed_terms: BilledTerms | null;
  }>(
    `DELETE FROM subscription_rebill_periods r
      USING unnest($1::bigint[], $2::bigint[]) AS x(org_id, id)
      WHERE r.org_id = x.org_id AND r.subscription_id = x.id
      RETURNING r.subscription_id, r.period_start, r.period_end, r.first_period, r.billed_terms`,
    [subscriptions.map((s) => s.org_id), subscriptions.map((s) => s.id)],
  );
  return rows
    .map((row) => ({ ...row, subscription_id: Number(row.subscription_id) }))
    .sort((a, b) => a.period_start.getTime() - b.period_start.getTime());
}
