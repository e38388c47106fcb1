import type { SubscriptionStatus } from '../../schemas/index.js';
import type { BillableItem } from '../pricing/index.js';
import type { ChangeCatalog, ChangingSubscription, ItemSetEntry, ResolvedEntry } from './item-set.js';
import { type ItemSetPlan, planItemSet } from './plan-item-set.js';
import { resolveItemSet } from './resolve-item-set.js';

/** A change of a subscription's items as it is asked for (POST /subscriptions/{id}/changes). */
export interface ChangeRequest {
  items: readonly ItemSetEntry[];
  effective: 'now' | 'period_end';
  proration: 'prorate' | 'none';
}

/**
 * A change worked out on what was read: `now`, the plan to write; `period_end`, the checked set
 * the billing run applies at the boundary (and the items it replaces then).
 */
export type PlannedChange =
  | { effective: 'now'; plan: ItemSetPlan }
  | { effective: 'period_end'; current: BillableItem[]; items: ResolvedEntry[]; effectiveAt: Date };

/** Statuses whose running period is not billed: the new items simply replace the old. */
const UNBILLED_STATUSES: readonly SubscriptionStatus[] = ['trialing', 'pending', 'paused'];

/**
 * Checks the requested set (resolveItemSet) and works the change out (planItemSet); pure, so a
 * preview is the very plan a change writes. A set for the period end is worked out at the
 * boundary now, so that it passes the door checks the billing run will apply it with.
 */
export function planChange(
  subscription: ChangingSubscription & { status: SubscriptionStatus },
  read: { items: readonly BillableItem[]; catalog: ChangeCatalog },
  request: ChangeRequest,
  now: Date,
): PlannedChange {
  const { items, catalog } = read;
  const current = items.filter((item) => !item.removed_at);
  const resolved = resolveItemSet(subscription, current, request.items, catalog, { checkActive: true });
  if (request.effective === 'period_end') {
    const effectiveAt = subscription.current_period_end;
    planItemSet(subscription, items, resolved, catalog, { at: effectiveAt, mode: 'direct' });
    return { effective: 'period_end', current, items: resolved, effectiveAt };
  }
  const mode = UNBILLED_STATUSES.includes(subscription.status) ? 'direct' : request.proration;
  return { effective: 'now', plan: planItemSet(subscription, items, resolved, catalog, { at: now, mode }) };
}
