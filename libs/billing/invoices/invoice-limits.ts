import type { FieldError } from '../../errors/index.js';
import { formatMoney, parseMoney, parseScaled } from '../../money/index.js';
import type { BillableItem } from '../pricing/index.js';
import { priceQuantity } from '../pricing/index.js';
import { UnbillableError } from './unbillable.js';

/**
 * What an invoice can hold, checked where prices and quantities come in: a product or a
 * subscription whose charges could never fit an invoice is refused at the door (422 naming the
 * field) instead of failing every billing run of its organization later. Usage is not known in
 * advance; a period whose usage overflows is set aside by the billing run (see billing-run.ts).
 */

/** An amount beyond what an invoice holds: one of the things retrying cannot fix. */
export class InvoiceLimitError extends UnbillableError {
  constructor(reason: string) {
    super(reason);
    this.name = 'InvoiceLimitError';
  }
}

/** Money columns are NUMERIC(20,8): 12 integer digits. */
export const MAX_STORED_MONEY = 10n ** 20n - 1n;
/** invoice_items.quantity is NUMERIC(20,4): 16 integer digits. */
export const MAX_STORED_QUANTITY = 10n ** 20n - 1n;

/**
 * The highest combined rate of any destination (NB, NL and PE's 15 % HST): a pre-tax amount must
 * leave room for it. tax.test.ts holds every destination's rate to it.
 */
export const HIGHEST_TAX_RATE = '0.15';

/** Whether `preTax` (money scale) plus the highest tax on it fits an invoice's total. */
export function fitsAnInvoice(preTax: bigint): boolean {
  const withTax = preTax + (preTax * parseScaled(HIGHEST_TAX_RATE, 6) + 999_999n) / 1_000_000n;
  return withTax <= MAX_STORED_MONEY;
}

/** The largest pre-tax amount that fits, for messages. */
export const LARGEST_PRE_TAX = formatMoney(
  (MAX_STORED_MONEY * 1_000_000n) / (1_000_000n + parseScaled(HIGHEST_TAX_RATE, 6)),
);

function tooLarge(field: string, what: string): FieldError {
  return {
    field,
    message: `${what} is more than an invoice can hold with the highest tax (at most ${LARGEST_PRE_TAX} before tax).`,
    code: 'out_of_range',
  };
}

/** A product's prices: one unit at the linear price, or at each tier's price and fee, must fit. */
export function productPriceProblems(product: {
  unit_price: string;
  tiers?: readonly { unit_price: string; flat_fee: string }[] | undefined;
}): FieldError[] {
  const problems: FieldError[] = [];
  if (!fitsAnInvoice(parseMoney(product.unit_price))) {
    problems.push(tooLarge('unit_price', 'One unit at this price'));
  }
  product.tiers?.forEach((tier, index) => {
    if (!fitsAnInvoice(parseMoney(tier.unit_price) + parseMoney(tier.flat_fee))) {
      problems.push(tooLarge(`tiers.${index}.unit_price`, "One unit of this tier, with the tier's fee,"));
    }
  });
  return problems;
}

/**
 * The charges of a subscription that do not depend on usage (licensed and one-time items at their
 * quantities, priced by the billing run's own code), in the order the items were given: each must
 * fit an invoice, and so must their sum. Fields are `items.N.quantity` and `items`.
 */
export function fixedChargeProblems(items: readonly BillableItem[]): FieldError[] {
  const problems: FieldError[] = [];
  let sum = 0n;
  items.forEach((item, index) => {
    if (item.usage_type === 'metered') return;
    const amount = parseMoney(
      priceQuantity({ ...item.pricing, unit_price: item.unit_price }, String(item.quantity)).amount,
    );
    sum += amount;
    if (!fitsAnInvoice(amount)) {
      problems.push(tooLarge(`items.${index}.quantity`, `${item.quantity} x ${item.product_name}`));
    }
  });
  if (problems.length === 0 && !fitsAnInvoice(sum)) {
    problems.push(tooLarge('items', "The items' charges together"));
  }
  return problems;
}
