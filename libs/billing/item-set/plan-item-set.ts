import { ApiError, type FieldError } from '../../errors/index.js';
import { parseMoney } from '../../money/index.js';
import {
  assertBillableCurrency,
  composing,
  fitsAnInvoice,
  fixedChargeProblems,
  itemForPeriod,
  MAX_STORED_MONEY,
} from '../invoices/index.js';
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
import type {
  ChangeCatalog,
  ChangeMode,
  ChangeProduct,
  ChangingSubscription,
  ResolvedEntry,
} from './item-set.js';
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
  /** Entitlements only: no billing term, no proration line. Absent or null: none. */
  usage_limit?: string | null;
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
  assertBillableCurrency(subscription.currency.trim());
  return composing(() => plan(subscription, items, resolved, catalog, context));
}

function plan(
  subscription: ChangingSubscription,
  items: readonly BillableItem[],
  resolved: readonly ResolvedEntry[],
  catalog: ChangeCatalog,
  context: { at: Date; mode: ChangeMode },
): ItemSetPlan {
  const change = changeTerms(subscription, context);
  const current = items.filter((item) => !item.removed_at);
  const changed = current.flatMap((item) => changeOfItem(item, entryOf(item, resolved), change));
  const updates = changed.map(({ update }) => update);
  const added = addedItems(resolved, catalog, change);
  const written = itemsAfterPlan(items, { updates, added });
  const after = itemsInEntryOrder(written, resolved, added);
  // What a change charges comes from what this change did: only the items it adds get a charge
  // for the rest of the period. An item an earlier change added keeps its `started_at` in the
  // period; charging it again here would bill it once per later change.
  const lines = [...changed.flatMap(({ lines }) => lines), ...chargesOfAdded(added, change)];
  const problems = fixedChargeProblems(after);
  if (problems.length === 0 && change.keepsBase) {
    problems.push(...runningPeriodProblems(written, lines, catalog.pendingLines, change.period));
  }
  if (problems.length) throw ApiError.validation(problems);
  return { before: [...current], after, proration_lines: lines, effective_at: change.at, updates, added };
}

/** Whether a plan leaves the items as they were: no item updated, added or removed. */
export function changesNothing(plan: Pick<ItemSetPlan, 'updates' | 'added'>): boolean {
  return plan.updates.length === 0 && plan.added.length === 0;
}

/** What every step of a plan is measured against. */
interface ChangeTerms {
  /** The change's instant, to the second (what proration counts). */
  at: Date;
  /** The running period. */
  period: Period;
  currency: string;
  mode: ChangeMode;
  /** Whether the running period is billed at the terms it began with (`prorate`, `none`). */
  keepsBase: boolean;
}

function changeTerms(
  subscription: ChangingSubscription,
  context: { at: Date; mode: ChangeMode },
): ChangeTerms {
  return {
    at: toTheSecond(context.at),
    period: { start: subscription.current_period_start, end: subscription.current_period_end },
    currency: subscription.currency.trim(),
    mode: context.mode,
    keepsBase: context.mode !== 'direct',
  };
}

function entryOf(item: BillableItem, resolved: readonly ResolvedEntry[]): ResolvedEntry | undefined {
  return resolved.find((candidate) => candidate.id === item.subscription_item_id);
}

/**
 * A current item the change re-quantifies (`entry` with other terms) or removes (no entry): its
 * update and, with `prorate`, its credit and charge lines. None when the entry keeps it as it is.
 */
function changeOfItem(
  item: BillableItem,
  entry: ResolvedEntry | undefined,
  change: ChangeTerms,
): { update: ItemUpdate; lines: ProrationLine[] }[] {
  const after = entry
    ? {
        ...item,
        quantity: entry.quantity,
        included_units: entry.included_units,
        usage_limit: entry.usage_limit ?? null,
      }
    : undefined;
  if (
    after &&
    after.quantity === item.quantity &&
    units(after.included_units) === units(item.included_units)
  ) {
    // A new usage limit alone is no billing term: the item is written with it, nothing charged.
    if (sameLimit(after.usage_limit, item.usage_limit)) return [];
    return [
      {
        update: {
          id: item.subscription_item_id,
          quantity: item.quantity,
          included_units: item.included_units,
          ...limitField(after.usage_limit),
          removed_at: null,
          base: item.base ?? null,
        },
        lines: [],
      },
    ];
  }
  const lines =
    change.mode === 'prorate'
      ? prorationLinesFor(item, after, { at: change.at, period: change.period, currency: change.currency })
      : [];
  return [
    {
      update: {
        id: item.subscription_item_id,
        quantity: after?.quantity ?? item.quantity,
        included_units: after?.included_units ?? item.included_units,
        ...limitField(after ? after.usage_limit : item.usage_limit),
        removed_at: after ? null : change.at.toISOString(),
        base: baseAfterChange(item, after, change),
      },
      lines,
    },
  ];
}

/**
 * The terms the running period began with, recorded by the first change of the period (the
 * invoice bills the period at them; the lines carry the difference). A `direct` change records
 * none but keeps one an earlier change recorded. A metered item's allowance follows time whatever
 * the proration, as its usage is counted by time too: the old for the time before, the new after.
 */
function baseAfterChange(
  item: BillableItem,
  after: BillableItem | undefined,
  change: ChangeTerms,
): ItemBase | null {
  const running =
    item.base && item.base.period_start.getTime() === change.period.start.getTime() ? item.base : null;
  if (!change.keepsBase) return running;
  const base = running ?? {
    period_start: change.period.start,
    quantity: item.quantity,
    unit_price: item.unit_price,
    included_units: item.included_units,
  };
  if (item.usage_type !== 'metered') return base;
  return {
    ...base,
    included_units: blendIncludedUnits(
      base.included_units,
      { before: item.included_units, after: after?.included_units ?? '0', at: change.at },
      change.period,
    ),
  };
}

/** The items the entries add, with the ids drawn for them, in the order of the entries. */
function addedItems(
  resolved: readonly ResolvedEntry[],
  catalog: ChangeCatalog,
  change: ChangeTerms,
): BillableItem[] {
  const ids = [...catalog.newItemIds];
  return resolved.flatMap((entry) =>
    entry.id === null ? [newItem(entry, catalog.products.get(entry.product_id)!, ids.shift()!, change)] : [],
  );
}

/**
 * An item of `product` as the change adds it, at the product's list price. Unless `direct`, it
 * starts at the change and the running period's base has it at quantity 0 (the period bills its
 * charge line, not the item) with its allowance for the time left.
 */
function newItem(
  entry: ResolvedEntry,
  product: ChangeProduct,
  id: number,
  change: ChangeTerms,
): BillableItem {
  const metered = product.pricing_type === 'usage';
  return {
    subscription_item_id: id,
    product_id: product.id,
    product_name: product.name,
    unit_label: product.unit_label,
    currency: product.currency,
    pricing_type: product.pricing_type,
    usage_type: metered ? 'metered' : 'licensed',
    quantity: entry.quantity,
    unit_price: product.unit_price,
    included_units: units(entry.included_units),
    ...limitField(entry.usage_limit),
    pricing: {
      pricing_model: product.pricing_model,
      pricing_scheme: product.pricing_scheme,
      pricing_mode: product.pricing_mode,
      tiers: product.tiers,
    },
    started_at: change.keepsBase ? change.at : null,
    removed_at: null,
    base: change.keepsBase
      ? {
          period_start: change.period.start,
          quantity: 0,
          unit_price: product.unit_price,
          included_units: metered
            ? proratedIncludedUnits(
                entry.included_units,
                { start: change.at, end: change.period.end },
                change.period,
              )
            : units('0'),
        }
      : null,
  };
}

/** The live items after the change in the order of the entries (an added one by its drawn id). */
function itemsInEntryOrder(
  written: readonly BillableItem[],
  resolved: readonly ResolvedEntry[],
  added: readonly BillableItem[],
): BillableItem[] {
  const live = new Map(
    written.filter((item) => !item.removed_at).map((item) => [item.subscription_item_id, item]),
  );
  const addedIds = added.map((item) => item.subscription_item_id);
  return resolved.map((entry) => live.get(entry.id ?? addedIds.shift()!)!);
}

/**
 * The charges of the items this change adds for the rest of the period: with `prorate`, and for
 * a one-time item whatever the proration (it is charged once, in full). None for `direct`.
 */
function chargesOfAdded(added: readonly BillableItem[], change: ChangeTerms): ProrationLine[] {
  return added.flatMap((item) =>
    item.started_at && (change.mode === 'prorate' || item.pricing_type === 'one_time')
      ? prorationLinesFor(undefined, item, {
          at: change.at,
          period: change.period,
          currency: change.currency,
        })
      : [],
  );
}

/**
 * The running period's invoice with this change (the base of every item billed in it, the lines
 * already waiting and this change's) must fit an invoice with the highest tax, and so must each
 * line: checked before anything is stored, so a line beyond NUMERIC(20, 8) is a 422, not an
 * overflow.
 */
function runningPeriodProblems(
  written: readonly BillableItem[],
  lines: readonly ProrationLine[],
  pendingLines: ChangeCatalog['pendingLines'],
  period: Period,
): FieldError[] {
  let total = 0n;
  for (const item of written) {
    const billed = itemForPeriod(item, period);
    if (billed && billed.usage_type === 'licensed') {
      total += parseMoney(
        priceQuantity({ ...billed.pricing, unit_price: billed.unit_price }, String(billed.quantity)).amount,
      );
    }
  }
  const amounts = [pendingLines.sum, ...lines.map((line) => line.amount)].map(parseMoney);
  const largest = [parseMoney(pendingLines.largest), ...amounts.map((a) => (a < 0n ? -a : a))];
  total += amounts.reduce((sum, amount) => sum + amount, 0n);
  if (largest.some((amount) => !fitsAnInvoice(amount))) total = MAX_STORED_MONEY + 1n;
  if (fitsAnInvoice(total)) return [];
  return [
    {
      field: 'items',
      message: 'The running period with this change is more than an invoice can hold with the highest tax.',
      code: 'out_of_range',
    },
  ];
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
            usage_limit: update.usage_limit,
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

/** Two usage limits alike (null: none), compared exactly. */
function sameLimit(a: string | null | undefined, b: string | null | undefined): boolean {
  if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
  return units(a) === units(b);
}

/** An update's limit, left out when there is none (the write stores null then). */
function limitField(limit: string | null | undefined): { usage_limit?: string } {
  return limit === null || limit === undefined ? {} : { usage_limit: limit };
}
