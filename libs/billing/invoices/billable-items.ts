import type { Queryable } from '../../db/index.js';
import type { BillableItem, ItemBase, Period, ProrationLine } from '../pricing/index.js';

/**
 * What a subscription's item bills in a period: at the terms the period began with (its base,
 * once a change touched it), usage over the part of the period it was on the subscription, and
 * the proration lines changes left for the period's invoice.
 */

export function itemForPeriod(item: BillableItem, period: Period): BillableItem | undefined {
  if (item.removed_at && item.removed_at <= period.start) return undefined;
  if (item.started_at && item.started_at >= period.end) return undefined;
  const base =
    item.base && item.base.period_start.getTime() === period.start.getTime() ? item.base : undefined;
  if (!base) return item;
  if (
    item.usage_type === 'licensed' &&
    base.quantity === 0 &&
    item.started_at &&
    item.started_at > period.start
  ) {
    return undefined;
  }
  return {
    ...item,
    quantity: base.quantity,
    unit_price: base.unit_price,
    included_units: base.included_units,
  };
}

/**
 * The terms a period's invoice billed its items at, by subscription item id: what a DRAFT keeps, so
 * that re-rating it or billing its period again after it was withdrawn bills the period as it was,
 * whatever a change has moved the items' own terms to since (they change in place).
 */
export type BilledTerms = Record<string, Pick<ItemBase, 'quantity' | 'unit_price' | 'included_units'>>;

/** What `items` bill for `period` (itemForPeriod), as BilledTerms. */
export function billedTermsOf(items: readonly BillableItem[], period: Period): BilledTerms {
  const terms: BilledTerms = {};
  for (const item of items) {
    const billed = itemForPeriod(item, period);
    if (!billed) continue;
    terms[item.subscription_item_id] = {
      quantity: billed.quantity,
      unit_price: billed.unit_price,
      included_units: billed.included_units,
    };
  }
  return terms;
}

/**
 * `items` as a period billed at `terms` bills them again: each at its terms, and one without any
 * left out (the period billed it nothing). Without terms (an invoice made before they were kept),
 * the items as they are.
 */
export function atBilledTerms(
  items: readonly BillableItem[],
  terms: BilledTerms | null | undefined,
): BillableItem[] {
  if (!terms) return [...items];
  return items.flatMap((item) => {
    const billed = terms[item.subscription_item_id];
    return billed ? [{ ...item, ...billed, base: null }] : [];
  });
}

/** The part of `period` a metered item's usage counts for: from its start to its removal. */
export function usageWindow(item: BillableItem, period: Period): Period {
  return {
    start: item.started_at && item.started_at > period.start ? item.started_at : period.start,
    end: item.removed_at && item.removed_at < period.end ? item.removed_at : period.end,
  };
}

export interface PendingProrationLine extends ProrationLine {
  id: number;
}

/**
 * Proration lines not invoiced yet whose period ends by `periodEnd`, per subscription, in the
 * order they were made: what the invoice of the period ending then carries.
 */
export async function pendingProrationLines(
  tx: Queryable,
  orgId: number | readonly number[],
  subscriptionIds: readonly number[],
  periodEnd: Date,
): Promise<Map<number, PendingProrationLine[]>> {
  const grouped = new Map<number, PendingProrationLine[]>();
  if (subscriptionIds.length === 0) return grouped;
  const { rows } = await tx.query<
    Omit<PendingProrationLine, 'period_start' | 'period_end'> & {
      subscription_id: number;
      period_start: Date;
      period_end: Date;
    }
  >(
    `SELECT id, subscription_id, subscription_item_id, product_id, description, quantity, unit_price, amount,
            period_start, period_end
       FROM subscription_proration_lines
      WHERE org_id = ANY($1::bigint[]) AND subscription_id = ANY($2::bigint[]) AND invoice_id IS NULL
        AND period_end <= $3
      ORDER BY subscription_id, id`,
    [Array.isArray(orgId) ? orgId : [orgId], subscriptionIds, periodEnd],
  );
  for (const { subscription_id, period_start, period_end, ...line } of rows) {
    const list = grouped.get(subscription_id) ?? [];
    list.push({ ...line, period_start: period_start.toISOString(), period_end: period_end.toISOString() });
    grouped.set(subscription_id, list);
  }
  return grouped;
}
