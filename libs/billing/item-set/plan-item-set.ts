import { ApiError } from '../../errors/index.js';
import { parseMoney } from '../../money/index.js';
import { fitsAnInvoice, fixedChargeProblems, itemForPeriod, MAX_STORED_MONEY } from '../invoices/index.js';
import type { BillableItem, ItemBase } from '../pricing/index.js';
import {
  blendIncludedUnits,
  type Period,
  type ProrationLine,
  priceQuantity,
  proratedIncludedUnits,
  prorationLinesFor,
  toTheSecond,
} from '../pricing/index.js';
import type { ChangeCatalog, ChangeMode, ChangingSubscription, ResolvedEntry } from './item-set.js';
import { units } from './item-set.js';

export interface AppliedItemSet {
  before: BillableItem[];
  /** The items after the change, in the order of the entries. */
  after: BillableItem[];
  proration_lines: ProrationLine[];
  effective_at: Date;
}

interface ItemUpdate {
  id: number;
  quantity: number;
  included_units: string;
  removed_at: string | null;
  base: ItemBase | null;
}

/** A change worked out, not written yet: what it answers, and what writeItemSetSql stores. */
export interface ItemSetPlan extends AppliedItemSet {
  updates: ItemUpdate[];
  added: BillableItem[];
}

/**
 * Works out a change (nothing is written): items re-quantified, added (started at `at`) and removed
 * (at `at`, kept until their period is invoiced), the running period's base terms recorded,
 * proration lines for the next invoice. Then the door checks every subscription passes at creation
 * (fixedChargeProblems, and the running period with its lines must fit an invoice): a refusal
 * throws. Pure, so a preview is the very plan a change writes.
 */
export function planItemSet(
  subscription: ChangingSubscription,
  /** The items and those removed within the running period (billableItemsSql). */
  items: readonly BillableItem[],
  resolved: readonly ResolvedEntry[],
  catalog: ChangeCatalog,
  context: { at: Date; mode: ChangeMode },
): ItemSetPlan {
  const current = items.filter((item) => !item.removed_at);
  const at = toTheSecond(context.at);
  const period: Period = { start: subscription.current_period_start, end: subscription.current_period_end };
  const currency = subscription.currency.trim();
  const keepsBase = context.mode !== 'direct';
  const lines: ProrationLine[] = [];
  const updates: ItemUpdate[] = [];

  const baseOf = (item: BillableItem): ItemBase | null => {
    const running =
      item.base && item.base.period_start.getTime() === period.start.getTime() ? item.base : null;
    if (!keepsBase) return running;
    return (
      running ?? {
        period_start: period.start,
        quantity: item.quantity,
        unit_price: item.unit_price,
        included_units: item.included_units,
      }
    );
  };

  for (const item of current) {
    const entry = resolved.find((candidate) => candidate.id === item.subscription_item_id);
    const after = entry
      ? { ...item, quantity: entry.quantity, included_units: entry.included_units }
      : undefined;
    if (
      after &&
      after.quantity === item.quantity &&
      units(after.included_units) === units(item.included_units)
    ) {
      continue;
    }
    let base = baseOf(item);
    if (keepsBase && base && item.usage_type === 'metered') {
      // metered allowances follow time whatever the proration: usage is counted by time too
      base = {
        ...base,
        included_units: blendIncludedUnits(
          base.included_units,
          { before: item.included_units, after: after?.included_units ?? '0', at },
          period,
        ),
      };
    }
    if (context.mode === 'prorate') lines.push(...prorationLinesFor(item, after, { at, period, currency }));
    updates.push({
      id: item.subscription_item_id,
      quantity: after?.quantity ?? item.quantity,
      included_units: after?.included_units ?? item.included_units,
      removed_at: after ? null : at.toISOString(),
      base,
    });
  }

  const newItemIds = [...catalog.newItemIds];
  const added = resolved.flatMap((entry): BillableItem[] => {
    if (entry.id !== null) return [];
    const product = catalog.products.get(entry.product_id)!;
    const metered = product.pricing_type === 'usage';
    return [
      {
        subscription_item_id: newItemIds.shift()!,
        product_id: product.id,
        product_name: product.name,
        unit_label: product.unit_label,
        currency: product.currency,
        pricing_type: product.pricing_type,
        usage_type: metered ? 'metered' : 'licensed',
        quantity: entry.quantity,
        unit_price: product.unit_price,
        included_units: units(entry.included_units),
        pricing: {
          pricing_model: product.pricing_model,
          pricing_scheme: product.pricing_scheme,
          pricing_mode: product.pricing_mode,
          tiers: product.tiers,
        },
        started_at: keepsBase ? at : null,
        removed_at: null,
        base: keepsBase
          ? {
              period_start: period.start,
              quantity: 0,
              unit_price: product.unit_price,
              included_units: metered
                ? proratedIncludedUnits(entry.included_units, { start: at, end: period.end }, period)
                : units('0'),
            }
          : null,
      },
    ];
  });

  const written = itemsAfterPlan(items, { updates, added });
  const live = new Map(
    written.filter((item) => !item.removed_at).map((item) => [item.subscription_item_id, item]),
  );
  const addedIds = added.map((item) => item.subscription_item_id);
  const after = resolved.map((entry) => live.get(entry.id ?? addedIds.shift()!)!);
  // What a change charges comes from what this change did: only the items it adds get a charge
  // for the rest of the period. An item an earlier change added keeps its `started_at` in the
  // period; charging it again here would bill it once per later change.
  for (const item of added) {
    if (item.started_at && (context.mode === 'prorate' || item.pricing_type === 'one_time')) {
      lines.push(...prorationLinesFor(undefined, item, { at, period, currency }));
    }
  }
  // checked before anything is stored: a line beyond NUMERIC(20, 8) must be a 422, not an overflow
  const problems = fixedChargeProblems(after);
  if (problems.length === 0 && keepsBase) {
    // the running period's invoice: the base of every item billed in it, plus all its lines
    let total = 0n;
    for (const item of written) {
      const billed = itemForPeriod(item, period);
      if (billed && billed.usage_type === 'licensed') {
        total += parseMoney(
          priceQuantity({ ...billed.pricing, unit_price: billed.unit_price }, String(billed.quantity)).amount,
        );
      }
    }
    const amounts = [catalog.pendingLines.sum, ...lines.map((line) => line.amount)].map(parseMoney);
    const largest = [parseMoney(catalog.pendingLines.largest), ...amounts.map((a) => (a < 0n ? -a : a))];
    total += amounts.reduce((sum, amount) => sum + amount, 0n);
    if (largest.some((amount) => !fitsAnInvoice(amount))) total = MAX_STORED_MONEY + 1n;
    if (!fitsAnInvoice(total)) {
      problems.push({
        field: 'items',
        message: 'The running period with this change is more than an invoice can hold with the highest tax.',
        code: 'out_of_range',
      });
    }
  }
  if (problems.length) throw ApiError.validation(problems);
  return { before: [...current], after, proration_lines: lines, effective_at: at, updates, added };
}

/** The subscription's items as a plan leaves them: updated in place, the added ones last. */
function itemsAfterPlan(
  items: readonly BillableItem[],
  plan: Pick<ItemSetPlan, 'updates' | 'added'>,
): BillableItem[] {
  return [
    ...items.map((item) => {
      const update = plan.updates.find((candidate) => candidate.id === item.subscription_item_id);
      return update
        ? {
            ...item,
            quantity: update.quantity,
            included_units: update.included_units,
            removed_at: update.removed_at ? new Date(update.removed_at) : null,
            base: update.base,
          }
        : item;
    }),
    ...plan.added,
  ];
}

const NOTHING_NAMED: ChangeCatalog = {
  products: new Map(),
  itemOwners: new Map(),
  newItemIds: [],
  pendingLines: { sum: '0', largest: '0' },
};

/**
 * The items of a subscription that stops at `at` (an immediate cancel) as its running period's
 * final invoice bills them: every item ends then, exactly as a change removing them all would end
 * it. Licensed items keep the terms the period began with and, with `prorate`, get a credit for
 * the rest of the period; metered items count usage until `at`, their included units by time.
 * Pure: nothing is written, the subscription keeps its items.
 */
export function endItemsAt(
  subscription: ChangingSubscription,
  items: readonly BillableItem[],
  context: { at: Date; mode: 'prorate' | 'none' },
): { items: BillableItem[]; lines: ProrationLine[] } {
  const plan = planItemSet(subscription, items, [], NOTHING_NAMED, context);
  return { items: itemsAfterPlan(items, plan), lines: plan.proration_lines };
}
