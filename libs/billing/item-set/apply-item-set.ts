import type { Queryable } from '../../db/index.js';
import type { BillableItem } from '../pricing/index.js';
import type { ChangeMode, ChangingSubscription, ResolvedEntry } from './item-set.js';
import {
  type ChangeCatalogRow,
  changeCatalogColumns,
  itemSetWriteCtes,
  toChangeCatalog,
} from './item-set-store.js';
import { changesNothing, type ItemSetPlan, planItemSet } from './plan-item-set.js';

/**
 * Applies a set at a scheduled change's boundary, in the billing run's transaction (which holds the
 * subscription's row): reads the catalog, works the change out, writes it. A set that changes
 * nothing (changesNothing) writes nothing: the caller emits no subscription.updated for it.
 */
export async function applyItemSet(
  tx: Queryable,
  subscription: ChangingSubscription,
  items: readonly BillableItem[],
  resolved: readonly ResolvedEntry[],
  context: { at: Date; mode: ChangeMode },
): Promise<ItemSetPlan> {
  const values: unknown[] = [];
  const param = (value: unknown) => `$${values.push(value)}`;
  const productIds = resolved.flatMap((entry) => (entry.id === null ? [entry.product_id] : []));
  const columns = changeCatalogColumns({
    productIds: `${param(productIds)}::bigint[]`,
    itemIds: `'{}'::bigint[]`,
    periodEnd: `${param(subscription.current_period_end)}::timestamptz`,
    drawIds: 'true',
  });
  const { rows } = await tx.query<ChangeCatalogRow>(
    `SELECT ${columns} FROM subscriptions s WHERE s.org_id = ${param(subscription.org_id)} AND s.id = ${param(subscription.id)}`,
    values,
  );
  const plan = planItemSet(subscription, items, resolved, toChangeCatalog(rows[0]!), context);
  if (changesNothing(plan)) return plan;
  const writes: unknown[] = [];
  const ctes = itemSetWriteCtes([{ subscription, plan }], (value) => `$${writes.push(value)}`);
  await tx.query(`WITH ${ctes} SELECT 1`, writes);
  return plan;
}
