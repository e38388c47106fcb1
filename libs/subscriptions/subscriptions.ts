import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import type {
  PaginationQuery,
  Subscription,
  SubscriptionItem,
  SubscriptionStatus,
} from '../schemas/index.js';

const COLUMNS = `id, customer_id, status, title, start_date, next_billing_date, billing_period, current_period_start,
  current_period_end, term_type, initial_term_months, auto_renew, subscription_end_date, trial_end_date,
  cancel_at_period_end, canceled_at, ended_at, created_at, updated_at`;

type SubscriptionRow = Omit<
  Subscription,
  | 'object'
  | 'items'
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
type ItemRow = SubscriptionItem & { subscription_id: number };

function toSubscription(row: SubscriptionRow, items: SubscriptionItem[]): Subscription {
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
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Items of many subscriptions in one query, in creation order. */
async function itemsBySubscription(
  db: Queryable,
  orgId: number,
  subscriptionIds: number[],
): Promise<Map<number, SubscriptionItem[]>> {
  const grouped = new Map<number, SubscriptionItem[]>(subscriptionIds.map((id) => [id, []]));
  if (subscriptionIds.length === 0) return grouped;
  const { rows } = await db.query<ItemRow>(
    `SELECT si.subscription_id, si.id, si.product_id, p.name AS product_name, si.quantity, si.unit_price,
            si.usage_type, si.included_units
       FROM subscription_items si JOIN products p ON p.id = si.product_id
      WHERE si.org_id = $1 AND si.subscription_id = ANY($2::bigint[])
      ORDER BY si.subscription_id, si.id`,
    [orgId, subscriptionIds],
  );
  for (const { subscription_id, ...item } of rows) grouped.get(subscription_id)?.push(item);
  return grouped;
}

export async function getSubscription(
  db: Queryable,
  orgId: number,
  subscriptionId: number,
): Promise<Subscription> {
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT ${COLUMNS} FROM subscriptions WHERE org_id = $1 AND id = $2`,
    [orgId, subscriptionId],
  );
  if (!rows[0]) throw ApiError.notFound(`Subscription ${subscriptionId}`);
  const items = await itemsBySubscription(db, orgId, [subscriptionId]);
  return toSubscription(rows[0], items.get(subscriptionId) ?? []);
}

export interface SubscriptionFilter {
  customerId?: number | undefined;
  status?: SubscriptionStatus | undefined;
}

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
  const where = conditions.join(' AND ');
  const [list, count] = await Promise.all([
    db.query<SubscriptionRow>(
      `SELECT ${COLUMNS} FROM subscriptions WHERE ${where} ORDER BY created_at DESC, id DESC
        LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      [...values, page.limit, page.offset],
    ),
    db.query<{ total: number }>(`SELECT count(*) AS total FROM subscriptions WHERE ${where}`, values),
  ]);
  const items = await itemsBySubscription(
    db,
    orgId,
    list.rows.map((r) => r.id),
  );
  return {
    data: list.rows.map((row) => toSubscription(row, items.get(row.id) ?? [])),
    total: count.rows[0]!.total,
  };
}
