import {
  formatMoney,
  formatQuantity,
  minorUnitDigits,
  parseMoney,
  parseScaled,
  QUANTITY_SCALE,
  roundToMinorUnit,
} from '../../money/index.js';
import type { TaxType } from '../../schemas/index.js';
import type { ProrationLine } from '../pricing/index.js';
import {
  type BillableItem,
  billableUsage,
  type PricedLine,
  type ProductPricing,
  priceQuantity,
} from '../pricing/index.js';
import { computeTax, type TaxRule } from '../tax/index.js';
import { InvoiceLimitError, MAX_STORED_MONEY, MAX_STORED_QUANTITY } from './invoice-limits.js';
import { UnbillableError } from './unbillable.js';

/**
 * The lines of one period's invoice (pure): licensed items at quantity x price, metered items on
 * the period's usage above their included units, one-time items on the first paid period only,
 * and the destination tax of each line.
 */

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
    /** Lines of subscription changes this invoice carries (already in the minor unit). */
    prorationLines?: readonly ProrationLine[] | undefined;
  },
): InvoiceDraft {
  const lines: Omit<InvoiceLine, 'tax_amount' | 'tax_type'>[] = [];
  for (const item of items) {
    if (item.currency !== context.currency) {
      // subscriptions are created single-currency; this guards the invariant, never mixes
      throw new UnbillableError(
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
    lines.push({
      product_id: item.product_id,
      subscription_item_id: item.subscription_item_id,
      description,
      quantity: priced.quantity,
      unit_price: priced.unit_price,
      // payable amounts (docs/architecture.md, "Money"): each line half-up to the minor unit; unit prices keep theirs
      line_total_pre_tax: formatMoney(roundToMinorUnit(parseMoney(priced.amount), context.currency)),
    });
  }
  for (const line of context.prorationLines ?? []) {
    lines.push({
      product_id: line.product_id,
      subscription_item_id: line.subscription_item_id,
      description: line.description,
      quantity: line.quantity,
      unit_price: line.unit_price,
      line_total_pre_tax: formatMoney(roundToMinorUnit(parseMoney(line.amount), context.currency)),
    });
  }
  const subtotal = lines.reduce((sum, line) => sum + parseMoney(line.line_total_pre_tax), 0n);
  // Every line of an invoice has its customer's one rule, so the taxable subtotal of each rate is
  // the subtotal: each component is rounded once, on it, and then shared out over the lines.
  const tax = computeTax(context.taxRule, formatMoney(subtotal), context.currency);
  const lineTaxes = shareOut(
    parseMoney(tax.amount),
    lines.map((line) => parseMoney(line.line_total_pre_tax)),
    context.currency,
  );
  const total = subtotal + parseMoney(tax.amount);
  if (total > MAX_STORED_MONEY) {
    // NUMERIC(20,8) would refuse it as "numeric field overflow": say what is wrong instead.
    throw new InvoiceLimitError(
      `the invoice total ${formatMoney(total)} ${context.currency} exceeds the largest amount stored (${formatMoney(MAX_STORED_MONEY)})`,
    );
  }
  return {
    lines: lines.map((line, index) => ({
      ...line,
      tax_amount: formatMoney(lineTaxes[index]!),
      tax_type: tax.taxType,
    })),
    subtotal: formatMoney(subtotal),
    tax_amount: tax.amount,
    total: formatMoney(total),
  };
}

/**
 * Shares an invoice's tax over its lines in proportion to their amounts, each share in the minor
 * unit, the shares summing to the tax exactly: every share is rounded down, then the units left
 * go one each to the lines with the largest remainders (ties: the earlier line).
 */
export function shareOut(tax: bigint, amounts: readonly bigint[], currency: string): bigint[] {
  const base = amounts.reduce((sum, amount) => sum + amount, 0n);
  if (tax === 0n || base === 0n) return amounts.map(() => 0n);
  // Lines adding up to less than zero (late lines alone, lowered by volume tiers) carry a negative
  // tax: share its opposite over the opposite lines, whose sum is positive as the rounding needs.
  if (base < 0n) {
    return shareOut(
      -tax,
      amounts.map((amount) => -amount),
      currency,
    ).map((share) => -share);
  }
  const unit = minorUnitStep(currency);
  const taxUnits = tax / unit;
  const shares = amounts.map((amount) => {
    const exact = taxUnits * amount;
    const floor = exact >= 0n ? exact / base : -((-exact + base - 1n) / base);
    return { floor, remainder: exact - floor * base };
  });
  let left = taxUnits - shares.reduce((sum, share) => sum + share.floor, 0n);
  const order = shares
    .map((_, index) => index)
    .sort((a, b) => {
      const difference = shares[b]!.remainder - shares[a]!.remainder;
      return difference > 0n ? 1 : difference < 0n ? -1 : a - b;
    });
  const result = shares.map((share) => share.floor);
  for (const index of order) {
    if (left <= 0n) break;
    result[index]! += 1n;
    left--;
  }
  return result.map((units) => units * unit);
}

function minorUnitStep(currency: string): bigint {
  return 10n ** BigInt(8 - minorUnitDigits(currency));
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
