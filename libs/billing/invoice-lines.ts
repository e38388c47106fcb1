import { formatMoney, formatQuantity, parseMoney, parseScaled, QUANTITY_SCALE } from '../money/index.js';
import type { TaxType } from '../schemas/index.js';
import { InvoiceLimitError, MAX_STORED_MONEY, MAX_STORED_QUANTITY } from './invoice-limits.js';
import { billableUsage, type PricedLine, type ProductPricing, priceQuantity } from './pricing.js';
import { computeTax, type TaxRule } from './tax.js';

/**
 * The lines of one period's invoice (pure): licensed items at quantity x price, metered items on
 * the period's usage above their included units, one-time items on the first paid period only,
 * and the destination tax of each line.
 */

export interface BillableItem {
  subscription_item_id: number;
  product_id: number;
  product_name: string;
  unit_label: string;
  currency: string;
  pricing_type: 'one_time' | 'recurring' | 'usage';
  usage_type: 'licensed' | 'metered';
  quantity: number;
  /** The subscribed price (copied from the product at subscription time): linear prices use it. */
  unit_price: string;
  included_units: string;
  /** The product's price structure; tiers come from the product. */
  pricing: Omit<ProductPricing, 'unit_price'>;
}

export interface InvoiceLine {
  product_id: number;
  subscription_item_id: number;
  description: string;
  quantity: string;
  unit_price: string;
  line_total_pre_tax: string;
  tax_amount: string;
  tax_type: TaxType | null;
}

export interface InvoiceDraft {
  lines: InvoiceLine[];
  subtotal: string;
  tax_amount: string;
  total: string;
}

export function buildInvoiceLines(
  items: readonly BillableItem[],
  context: {
    currency: string;
    /** subscription_item_id -> usage of the period (metered items). */
    usage: ReadonlyMap<number, string>;
    /** Whether this is the subscription's first paid period (one-time items are billed then). */
    firstPeriod: boolean;
    taxRule: TaxRule;
  },
): InvoiceDraft {
  const lines: InvoiceLine[] = [];
  let subtotal = 0n;
  let tax = 0n;
  for (const item of items) {
    if (item.currency !== context.currency) {
      // subscriptions are created single-currency; this guards the invariant, never mixes
      throw new Error(
        `subscription item ${item.subscription_item_id} is priced in ${item.currency}, the invoice in ${context.currency}`,
      );
    }
    if (item.pricing_type === 'one_time' && !context.firstPeriod) continue;
    const pricing: ProductPricing = { ...item.pricing, unit_price: item.unit_price };
    let description = item.product_name;
    let priced: ReturnType<typeof priceQuantity>;
    if (item.usage_type === 'metered') {
      const used = context.usage.get(item.subscription_item_id) ?? '0';
      priced = priceQuantity(pricing, billableUsage(used, item.included_units));
      const included = parseScaled(item.included_units, 8, 'half-even');
      description += ` (usage: ${trimDecimal(used)} ${item.unit_label}${included > 0n ? `, ${trimDecimal(item.included_units)} included` : ''})`;
    } else {
      priced = priceQuantity(pricing, String(item.quantity));
    }
    assertLineFitsStorage(item.product_name, priced, context.currency);
    const lineTax = computeTax(context.taxRule, priced.amount);
    subtotal += parseMoney(priced.amount);
    tax += parseMoney(lineTax.amount);
    lines.push({
      product_id: item.product_id,
      subscription_item_id: item.subscription_item_id,
      description,
      quantity: priced.quantity,
      unit_price: priced.unit_price,
      line_total_pre_tax: priced.amount,
      tax_amount: lineTax.amount,
      tax_type: lineTax.taxType,
    });
  }
  const total = subtotal + tax;
  if (total > MAX_STORED_MONEY) {
    // NUMERIC(20,8) would refuse it as "numeric field overflow": say what is wrong instead.
    throw new InvoiceLimitError(
      `the invoice total ${formatMoney(total)} ${context.currency} exceeds the largest amount stored (${formatMoney(MAX_STORED_MONEY)})`,
    );
  }
  return {
    lines,
    subtotal: formatMoney(subtotal),
    tax_amount: formatMoney(tax),
    total: formatMoney(total),
  };
}

/**
 * A line's own columns can overflow while the invoice total fits: usage beyond 16 integer digits
 * at a tiny price, or a tiered line's average unit price when a large fee is spread over a
 * fraction of a unit. Postgres would refuse it as a bare "numeric field overflow"; say which line
 * and what, instead. (Line amounts and taxes never exceed the total, which is checked below.)
 */
function assertLineFitsStorage(productName: string, line: PricedLine, currency: string): void {
  if (parseScaled(line.quantity, QUANTITY_SCALE) > MAX_STORED_QUANTITY) {
    throw new InvoiceLimitError(
      `${productName}: the quantity ${line.quantity} exceeds the largest quantity stored (${formatQuantity(MAX_STORED_QUANTITY)})`,
    );
  }
  if (parseMoney(line.unit_price) > MAX_STORED_MONEY) {
    throw new InvoiceLimitError(
      `${productName}: the unit price ${line.unit_price} ${currency} exceeds the largest amount stored (${formatMoney(MAX_STORED_MONEY)})`,
    );
  }
}

/** '1500.00000000' -> '1500', '0.50000000' -> '0.5': for descriptions people read. */
export function trimDecimal(value: string): string {
  return value.includes('.') ? value.replace(/0+$/, '').replace(/\.$/, '') : value;
}
