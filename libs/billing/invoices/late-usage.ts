import {
  divideRoundHalfEven,
  formatMoney,
  formatQuantity,
  formatScaled,
  parseMoney,
  parseScaled,
  QUANTITY_SCALE,
  roundToMinorUnit,
} from '../../money/index.js';
import { type BillableItem, billableUsage, type ProrationLine, priceQuantity } from '../pricing/index.js';

/**
 * Late usage (docs/decisions.md "Late usage is billed on the next invoice, where the period's
 * tiers left off"): what a metered item's period was billed, and the line the next invoice
 * carries for usage of that period counted since. Pure.
 */

/** What an item's invoiced period was billed: on its invoice, and late since. */
export interface BilledPeriod {
  org_id: number;
  subscription_id: number;
  subscription_item_id: number;
  period_start: Date;
  period_end: Date;
  /** The part of the period the item's usage counted for (usageWindow). */
  window_start: Date;
  window_end: Date;
  invoice_id: string;
  invoice_status: string;
  /** Billed on the period's invoice. */
  period_quantity: string;
  /** Billed since on later invoices' late-usage lines. */
  late_quantity: string;
  /** The terms the period was billed at. */
  included_units: string;
  unit_price: string;
}

/** A late-usage line and what it bills. */
export interface LateUsageLine extends ProrationLine {
  /** The item's period it bills late usage of. */
  billed: BilledPeriod;
  /** The late quantity it bills (exact, 8 digits). */
  late_quantity: string;
}

/** What a period's metered item costs for `quantity` at the period's terms, in the minor unit. */
export function periodAmount(
  item: Pick<BillableItem, 'pricing'>,
  billed: Pick<BilledPeriod, 'included_units' | 'unit_price'>,
  quantity: string,
  currency: string,
): bigint {
  const priced = priceQuantity(
    { ...item.pricing, unit_price: billed.unit_price },
    billableUsage(quantity, billed.included_units),
  );
  return roundToMinorUnit(parseMoney(priced.amount), currency);
}

/**
 * The late-usage line of `billed` now that `counted` is counted for its period, or undefined when
 * nothing more is counted than was billed. Amount: the period's price of everything counted minus
 * the period's price of what was billed, each in the minor unit as the invoice lines were: tiers
 * and included units carry on, and every line billed for the period adds up to the price of what
 * it counted.
 */
export function lateUsageLine(
  item: BillableItem,
  billed: BilledPeriod,
  counted: string,
  currency: string,
): LateUsageLine | undefined {
  const before = parseScaled(billed.period_quantity, 8) + parseScaled(billed.late_quantity, 8);
  const now = parseScaled(counted, 8);
  if (now <= before) return undefined;
  const late = now - before;
  const lateText = formatScaled8(late);
  const amount =
    periodAmount(item, billed, counted, currency) -
    periodAmount(item, billed, formatScaled8(before), currency);
  const shown = parseScaled(lateText, QUANTITY_SCALE, 'half-even');
  return {
    billed,
    late_quantity: lateText,
    description: `${item.product_name}: late usage, ${periodLabel(billed.period_start, billed.period_end)}`,
    subscription_item_id: item.subscription_item_id,
    product_id: item.product_id,
    quantity: formatQuantity(shown),
    unit_price: formatMoney(
      shown === 0n ? 0n : divideRoundHalfEven(amount * 10n ** BigInt(QUANTITY_SCALE), shown),
    ),
    amount: formatMoney(amount),
    period_start: billed.period_start.toISOString(),
    period_end: billed.period_end.toISOString(),
  };
}

function formatScaled8(value: bigint): string {
  return formatScaled(value, 8);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "Oct 1-31", "Oct 15-Nov 14", "Dec 15, 2025-Jan 14, 2026": the days of [start, end), UTC. */
export function periodLabel(start: Date, end: Date): string {
  const last = new Date(Math.max(start.getTime(), end.getTime() - 1));
  const month = (d: Date) => MONTHS[d.getUTCMonth()]!;
  if (start.getUTCFullYear() !== last.getUTCFullYear()) {
    return `${month(start)} ${start.getUTCDate()}, ${start.getUTCFullYear()}-${month(last)} ${last.getUTCDate()}, ${last.getUTCFullYear()}`;
  }
  if (start.getUTCMonth() !== last.getUTCMonth()) {
    return `${month(start)} ${start.getUTCDate()}-${month(last)} ${last.getUTCDate()}`;
  }
  return `${month(start)} ${start.getUTCDate()}-${last.getUTCDate()}`;
}
