import { type ItemToShow, publicSubscriptionItem } from '../billing/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { listTotal, readPage } from '../list-pages/index.js';
import {
  type PaginationQuery,
  type PendingChange,
  parseIntegerId,
  type Subscription,
  type SubscriptionItem,
  type SubscriptionStatus,
} from '../schemas/index.js';

/** The subscription object's columns (alias s), for every read of one. */
export const SUBSCRIPTION_COLUMNS = `s.id, s.customer_id, s.status, s.title, s.start_date, s.next_billing_date, s.billing_period,
  s.current_period_start, s.current_period_end, s.term_type, s.initial_term_months, s.auto_renew,
  s.subscription_end_date, s.trial_end_date, s.cancel_at_period_end, s.canceled_at, s.ended_at, s.created_at,
  s.updated_at`;

export type SubscriptionRow = Omit<
  Subscription,
  | 'object'
  | 'items'
  | 'pending_change'
  | 'start_date'
  | 'next_billing_date'
  | 'current_period_start'
  | 'current_period_end'
  | 'subscription_end_date'
  | 'trial_end_date'
  | 'canceled_at'
  | 'ended_at'
  | 'created_at'
  | 'updated_at'
> & {
  start_date: Date;
  next_billing_date: Date;
  current_period_start: Date;
  current_period_end: Date;
  subscription_end_date: Date | null;
  trial_end_date: Date | null;
  canceled_at: Date | null;
  ended_at: Date | null;
  created_at: Date;
  updated_at: Date;
};
type ItemRow = ItemToShow & { subscription_id: number };

export function toSubscription(
  row: SubscriptionRow,
  items: SubscriptionItem[],
  pendingChange: PendingChange | null,
): Subscription {
  return {
    ...row,
    object: 'subscription',
    start_date: row.start_date.toISOString(),
    next_billing_date: row.next_billing_date.toISOString(),
    current_period_start: row.current_period_start.toISOString(),
    current_period_end: row.current_period_end.toISOString(),
    subscription_end_date: row.subscription_end_date?.toISOString() ?? null,
    trial_end_date: row.trial_end_date?.toISOString() ?? null,
    canceled_at: row.canceled_at?.toISOString() ?? null,
    ended_at: row.ended_at?.toISOString() ?? null,
    items,
    pending_change: pendingChange,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Items of many subscriptions in one query, in creation order, keyed by the subscription row's id. */
async function itemsBySubscription(
  db: Queryable,
  orgId: number,
  subscriptionIds: number[],
): Promise<Map<number, SubscriptionItem[]>> {
  const grouped = new Map<number, SubscriptionItem[]>();
  if (subscriptionIds.length === 0) return grouped;
  const { rows } = await db.query<ItemRow>(
    `SELECT si.subscription_id, si.id AS subscription_item_id, si.product_id, p.name AS product_name, si.quantity,
            si.unit_price, si.usage_type, si.included_units, si.usage_limit::text AS usage_limit
       FROM subscription_items si JOIN products p ON p.org_id = si.org_id AND p.id = si.product_id
      WHERE si.org_id = $1 AND si.subscription_id = ANY($2::bigint[]) AND si.removed_at IS NULL
      ORDER BY si.subscription_id, si.id`,
    [orgId, subscriptionIds],
  );
  for (const row of rows) {
    const item = publicSubscriptionItem(row);
    const items = grouped.get(row.subscription_id);
    if (items) items.push(item);
    else grouped.set(row.subscription_id, [item]);
  }
  return grouped;
}

/** Changes scheduled for the end of the running period (docs/architecture.md, "A subscription change's way"), by subscription. */
async function pendingChanges(
  db: Queryable,
  orgId: number,
  subscriptionIds: number[],
): Promise<Map<number, PendingChange>> {
  const pending = new Map<number, PendingChange>();
  if (subscriptionIds.length === 0) return pending;
  const { rows } = await db.query<{
    subscription_id: number;
    items: PendingChange['items'];
    effective_at: Date;
  }>(
    `SELECT subscription_id, items, effective_at FROM subscription_pending_changes
      WHERE org_id = $1 AND subscription_id = ANY($2::bigint[])`,
    [orgId, subscriptionIds],
  );
  for (const row of rows) {
    pending.set(row.subscription_id, {
      // an entry stores a usage limit only when it has one
      items: row.items.map((item) => ({ ...item, usage_limit: item.usage_limit ?? null })),
      effective_at: row.effective_at.toISOString(),
    });
  }
  return pending;
}

/** A text id that is not a positive integer is simply not found (docs/decisions.md). */
export async function getSubscription(
  db: Queryable,
  orgId: number,
  subscriptionId: number | string,
): Promise<Subscription> {
  const id = parseIntegerId(subscriptionId);
  if (id === undefined) throw ApiError.notFound(`Subscription ${subscriptionId}`);
  const [subscription, items, pending] = await Promise.all([
    db.query<SubscriptionRow>(
      `SELECT ${SUBSCRIPTION_COLUMNS} FROM subscriptions s WHERE s.org_id = $1 AND s.id = $2`,
      [orgId, id],
    ),
    itemsBySubscription(db, orgId, [id]),
    pendingChanges(db, orgId, [id]),
  ]);
  const row = subscription.rows[0];
  if (!row) throw ApiError.notFound(`Subscription ${subscriptionId}`);
  return toSubscription(row, items.get(row.id) ?? [], pending.get(row.id) ?? null);
}

export interface SubscriptionFilter {
  customerId?: number | undefined;
  status?: SubscriptionStatus | undefined;
}

/**
 * Newest first (see libs/list-pages for how a page is read); each filter combination has its
 * (org_id, ..., created_at, id) index. The page's items come in one more query.
 */
export async function listSubscriptions(
  db: Queryable,
  orgId: number,
  filter: SubscriptionFilter,
  page: PaginationQuery,
): Promise<{ data: Subscription[]; total: number }> {
  const conditions = ['org_id = $1'];
  const values: unknown[] = [orgId];
  if (filter.customerId !== undefined) {
    values.push(filter.customerId);
    conditions.push(`customer_id = $${values.length}`);
  }
  if (filter.status !== undefined) {
    values.push(filter.status);
    conditions.push(`status = $${values.length}`);
  }
  const { rows, total } = await readPage<SubscriptionRow>(
    db,
    {
      table: 'subscriptions',
      alias: 's',
      columns: SUBSCRIPTION_COLUMNS,
      where: conditions.join(' AND '),
      values,
      total: () => listTotal(db, { orgId, list: 'subscriptions', ...filter }),
    },
    page,
  );
  const ids = rows.map((r) => r.id);
  const [items, pending, count] = await Promise.all([
    itemsBySubscription(db, orgId, ids),
    pendingChanges(db, orgId, ids),
    total,
  ]);
  return {
    data: rows.map((row) => toSubscription(row, items.get(row.id) ?? [], pending.get(row.id) ?? null)),
    total: count,
  };
}
