import type { FieldError } from '../../errors/index.js';
import { isBillableCurrency } from '../../money/index.js';
import type { BillingPeriod } from '../../schemas/index.js';

/**
 * The rules every item of a subscription obeys, written once: creating a subscription and
 * changing its items check them with the same functions, so both answer the same field and the
 * same message. Each returns the problems it finds (a 422 entry naming the field), none when the
 * item passes.
 */

/** What the rules read of the product an item is of. */
export interface RuledProduct {
  id: number;
  pricing_type: 'one_time' | 'recurring' | 'usage';
  currency: string;
  is_active: boolean;
  default_billing_period: BillingPeriod;
}

/** What all items of one subscription share: an invoice never mixes currencies or periods. */
export interface SubscriptionTerms {
  currency: string;
  billing_period: BillingPeriod;
}

/** What an entry sets on its item besides the product. */
export interface ItemSettings {
  quantity?: number | undefined;
  included_units?: string | undefined;
  usage_limit?: string | null | undefined;
}

const problem = (field: string, message: string): FieldError => ({ field, message, code: 'invalid_value' });

/** An item is metered when its product is usage-priced: its usage is what it bills. */
export function isMetered(product: Pick<RuledProduct, 'pricing_type'>): boolean {
  return product.pricing_type === 'usage';
}

/**
 * A product put on a subscription (`at` names the entry, `items.N`): active (unless `checkActive`
 * is false: a scheduled set at its boundary was checked when it was scheduled), priced in the
 * subscription's currency and, unless charged once, per the subscription's billing period (a
 * monthly price billed once a year would be a wrong bill).
 */
export function productProblems(
  product: RuledProduct,
  terms: SubscriptionTerms,
  at: string,
  options: { checkActive: boolean },
): FieldError[] {
  const problems: FieldError[] = [];
  if (options.checkActive && !product.is_active) {
    problems.push(problem(`${at}.product_id`, `Product ${product.id} is not active.`));
  }
  if (!isBillableCurrency(product.currency)) {
    problems.push(
      problem(
        `${at}.product_id`,
        `Product ${product.id} is priced in ${product.currency}, a currency that cannot be billed.`,
      ),
    );
  } else if (product.currency !== terms.currency) {
    problems.push(
      problem(
        `${at}.product_id`,
        `Product ${product.id} is priced in ${product.currency}; this subscription is billed in ${terms.currency}.`,
      ),
    );
  }
  if (product.pricing_type !== 'one_time' && product.default_billing_period !== terms.billing_period) {
    problems.push(
      problem(
        `${at}.product_id`,
        `Product ${product.id} is priced ${product.default_billing_period}; this subscription is billed ${terms.billing_period}.`,
      ),
    );
  }
  return problems;
}

/**
 * Only a metered item has included units; zero is no allowance, which every item has (an item
 * shows `included_units` 0 when it has none, so that value sent back is no problem).
 */
export function includedUnitsProblems(metered: boolean, settings: ItemSettings, at: string): FieldError[] {
  if (metered || settings.included_units === undefined || !/[1-9]/.test(settings.included_units)) return [];
  return [problem(`${at}.included_units`, 'Only metered items (usage-priced products) have included units.')];
}

/**
 * Only a metered item has a usage limit (what the entitlement check compares its period's usage
 * with); null (no limit) is what every item has, so that value sent back is no problem.
 */
export function usageLimitProblems(metered: boolean, settings: ItemSettings, at: string): FieldError[] {
  if (metered || settings.usage_limit === undefined || settings.usage_limit === null) return [];
  return [problem(`${at}.usage_limit`, 'Only metered items (usage-priced products) have a usage limit.')];
}

/**
 * A change gives no quantity to a metered item (`subject` names it: "Product 12", "Item 41"): its
 * usage is its quantity. Creating a subscription stores the quantity it is given, as it always has.
 */
export function meteredQuantityProblems(
  subject: string,
  metered: boolean,
  settings: ItemSettings,
  at: string,
): FieldError[] {
  if (!metered || settings.quantity === undefined) return [];
  return [problem(`${at}.quantity`, `${subject} is usage-priced: its usage is its quantity.`)];
}

/**
 * A subscription bills something every period: one-time items alone would be billed once, then
 * an empty invoice every period after, forever.
 */
export function periodicItemProblems(pricingTypes: readonly RuledProduct['pricing_type'][]): FieldError[] {
  if (pricingTypes.some((type) => type !== 'one_time')) return [];
  return [
    problem(
      'items',
      'A subscription needs at least one recurring or usage item; one-time items alone are a one-off charge.',
    ),
  ];
}
