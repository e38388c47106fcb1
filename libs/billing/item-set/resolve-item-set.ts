import { ApiError, type FieldError } from '../../errors/index.js';
import { productPriceProblems } from '../invoices/index.js';
import type { BillableItem } from '../pricing/index.js';
import {
  type ChangeCatalog,
  type ChangingSubscription,
  type ItemSetEntry,
  type ResolvedEntry,
  units,
} from './item-set.js';
import { namedIds } from './item-set-store.js';

/**
 * Checks a requested set against the subscription's current items and the catalog: 404 for an
 * item or product this organization does not have, 422 naming each field otherwise.
 * `checkActive` false at a scheduled change's boundary: the set was valid when it was scheduled.
 */
export function resolveItemSet(
  subscription: ChangingSubscription,
  current: readonly BillableItem[],
  entries: readonly ItemSetEntry[],
  catalog: ChangeCatalog,
  options: { checkActive: boolean },
): ResolvedEntry[] {
  const currentById = new Map(current.map((item) => [item.subscription_item_id, item]));
  const { productIds, itemIds } = namedIds(entries);
  const unknownItem = itemIds.find((id) => !currentById.has(id) && !catalog.itemOwners.has(id));
  if (unknownItem !== undefined) throw ApiError.notFound(`Subscription item ${unknownItem}`);
  const unknownProduct = productIds.find((id) => !catalog.products.has(id));
  if (unknownProduct !== undefined) throw ApiError.notFound(`Product ${unknownProduct}`);
  const products = catalog.products;

  const problems: FieldError[] = [];
  const problem = (field: string, message: string, code = 'invalid_value') =>
    problems.push({ field, message, code });
  const resolved = entries.map((entry, index): ResolvedEntry | undefined => {
    const at = `items.${index}`;
    if (entry.id !== undefined) {
      const item = currentById.get(entry.id);
      if (!item) {
        problem(
          `${at}.id`,
          `Item ${entry.id} belongs to subscription ${catalog.itemOwners.get(entry.id)}, not this one.`,
        );
        return undefined;
      }
      const metered = item.usage_type === 'metered';
      if (metered && entry.quantity !== undefined) {
        problem(
          `${at}.quantity`,
          `Item ${item.subscription_item_id} is usage-priced: its usage is its quantity.`,
        );
      }
      if (!metered && entry.included_units !== undefined) {
        problem(`${at}.included_units`, 'Only metered items (usage-priced products) have included units.');
      }
      return {
        id: item.subscription_item_id,
        product_id: item.product_id,
        quantity: metered ? item.quantity : (entry.quantity ?? item.quantity),
        included_units: units(metered ? (entry.included_units ?? item.included_units) : '0'),
      };
    }
    const product = products.get(entry.product_id!)!;
    const metered = product.pricing_type === 'usage';
    if (options.checkActive && !product.is_active) {
      problem(`${at}.product_id`, `Product ${product.id} is not active.`);
    }
    if (product.currency !== subscription.currency.trim()) {
      problem(
        `${at}.product_id`,
        `Product ${product.id} is priced in ${product.currency}; this subscription is billed in ${subscription.currency.trim()}.`,
      );
    }
    if (
      product.pricing_type !== 'one_time' &&
      product.default_billing_period !== subscription.billing_period
    ) {
      problem(
        `${at}.product_id`,
        `Product ${product.id} is priced ${product.default_billing_period}; this subscription is billed ${subscription.billing_period}.`,
      );
    }
    if (metered && entry.quantity !== undefined) {
      problem(`${at}.quantity`, `Product ${product.id} is usage-priced: its usage is its quantity.`);
    }
    if (!metered && entry.included_units !== undefined) {
      problem(`${at}.included_units`, 'Only metered items (usage-priced products) have included units.');
    }
    if (options.checkActive) {
      for (const priceProblem of productPriceProblems({ unit_price: product.unit_price })) {
        problem(`${at}.product_id`, priceProblem.message, priceProblem.code);
      }
    }
    return {
      id: null,
      product_id: product.id,
      quantity: metered ? 1 : (entry.quantity ?? 1),
      included_units: units(metered ? (entry.included_units ?? '0') : '0'),
    };
  });
  const periodic = resolved.filter((entry) => {
    if (!entry) return true;
    const type =
      entry.id === null
        ? products.get(entry.product_id)!.pricing_type
        : currentById.get(entry.id)!.pricing_type;
    return type !== 'one_time';
  });
  if (periodic.length === 0) {
    problem(
      'items',
      'A subscription needs at least one recurring or usage item; one-time items alone are a one-off charge.',
    );
  }
  if (problems.length) throw ApiError.validation(problems);
  return resolved as ResolvedEntry[];
}
