import { ApiError, type FieldError } from '../../errors/index.js';
import { productPriceProblems } from '../invoices/index.js';
import type { BillableItem } from '../pricing/index.js';
import {
  includedUnitsProblems,
  isMetered,
  meteredQuantityProblems,
  periodicItemProblems,
  productProblems,
  type RuledProduct,
  type SubscriptionTerms,
  usageLimitProblems,
} from './item-rules.js';
import {
  type ChangeCatalog,
  type ChangeProduct,
  type ChangingSubscription,
  type ItemSetEntry,
  type ResolvedEntry,
  units,
} from './item-set.js';
import { namedIds } from './item-set-store.js';

/**
 * Checks a requested set against the subscription's current items and the catalog: 404 for an
 * item or product this organization does not have, 422 naming each field otherwise (the rules of
 * item-rules.ts, as creating a subscription checks them). `checkActive` false at a scheduled
 * change's boundary: the set was valid when it was scheduled.
 */
export function resolveItemSet(
  subscription: ChangingSubscription,
  current: readonly BillableItem[],
  entries: readonly ItemSetEntry[],
  catalog: ChangeCatalog,
  options: { checkActive: boolean },
): ResolvedEntry[] {
  const currentById = new Map(current.map((item) => [item.subscription_item_id, item]));
  assertNamedExist(currentById, entries, catalog);
  const terms = { currency: subscription.currency.trim(), billing_period: subscription.billing_period };
  const checked = entries.map((entry, index) =>
    entry.id === undefined
      ? addedEntry(entry, catalog.products.get(entry.product_id!)!, `items.${index}`, terms, options)
      : keptEntry(entry as ItemSetEntry & { id: number }, currentById, catalog, `items.${index}`),
  );
  const problems = checked.flatMap((entry) => entry.problems);
  const resolved = checked.flatMap((entry) => (entry.resolved ? [entry.resolved] : []));
  if (resolved.length === entries.length) {
    problems.push(...periodicItemProblems(checked.map((entry) => entry.pricingType!)));
  }
  if (problems.length) throw ApiError.validation(problems);
  return resolved;
}

/** 404 for the first item or product the entries name that this organization does not have. */
function assertNamedExist(
  currentById: ReadonlyMap<number, BillableItem>,
  entries: readonly ItemSetEntry[],
  catalog: ChangeCatalog,
): void {
  const { productIds, itemIds } = namedIds(entries);
  const unknownItem = itemIds.find((id) => !currentById.has(id) && !catalog.itemOwners.has(id));
  if (unknownItem !== undefined) throw ApiError.notFound(`Subscription item ${unknownItem}`);
  const unknownProduct = productIds.find((id) => !catalog.products.has(id));
  if (unknownProduct !== undefined) throw ApiError.notFound(`Product ${unknownProduct}`);
}

interface CheckedEntry {
  /** Undefined when the entry cannot be completed (an item of another subscription). */
  resolved?: ResolvedEntry;
  pricingType?: RuledProduct['pricing_type'];
  problems: FieldError[];
}

/** An entry that keeps one of the subscription's items: its new quantity or included units. */
function keptEntry(
  entry: ItemSetEntry & { id: number },
  currentById: ReadonlyMap<number, BillableItem>,
  catalog: ChangeCatalog,
  at: string,
): CheckedEntry {
  const item = currentById.get(entry.id);
  if (!item) {
    const owner = catalog.itemOwners.get(entry.id);
    return {
      problems: [
        {
          field: `${at}.id`,
          message: `Item ${entry.id} belongs to subscription ${owner}, not this one.`,
          code: 'invalid_value',
        },
      ],
    };
  }
  const metered = item.usage_type === 'metered';
  return {
    resolved: {
      id: item.subscription_item_id,
      product_id: item.product_id,
      quantity: metered ? item.quantity : (entry.quantity ?? item.quantity),
      included_units: units(metered ? (entry.included_units ?? item.included_units) : '0'),
      ...limitOf(metered, entry.usage_limit === undefined ? (item.usage_limit ?? null) : entry.usage_limit),
    },
    pricingType: item.pricing_type,
    problems: [
      ...meteredQuantityProblems(`Item ${item.subscription_item_id}`, metered, entry, at),
      ...includedUnitsProblems(metered, entry, at),
      ...usageLimitProblems(metered, entry, at),
    ],
  };
}

/** An entry that adds an item of `product`, on the subscription's terms, at its list price. */
function addedEntry(
  entry: ItemSetEntry,
  product: ChangeProduct,
  at: string,
  terms: SubscriptionTerms,
  options: { checkActive: boolean },
): CheckedEntry {
  const metered = isMetered(product);
  const problems = [
    ...productProblems(product, terms, at, options),
    ...meteredQuantityProblems(`Product ${product.id}`, metered, entry, at),
    ...includedUnitsProblems(metered, entry, at),
    ...usageLimitProblems(metered, entry, at),
  ];
  if (options.checkActive) {
    for (const priceProblem of productPriceProblems({ unit_price: product.unit_price })) {
      problems.push({ ...priceProblem, field: `${at}.product_id` });
    }
  }
  return {
    resolved: {
      id: null,
      product_id: product.id,
      quantity: metered ? 1 : (entry.quantity ?? 1),
      included_units: units(metered ? (entry.included_units ?? '0') : '0'),
      ...limitOf(metered, entry.usage_limit ?? null),
    },
    pricingType: product.pricing_type,
    problems,
  };
}

/** A metered item's usage limit, exact to 8 digits, as a field; none (left out) for a licensed item. */
function limitOf(metered: boolean, limit: string | null): { usage_limit?: string } {
  return metered && limit !== null ? { usage_limit: units(limit) } : {};
}
