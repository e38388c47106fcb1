import { formatMoney, formatScaled, parseMoney, parseScaled, roundToMinorUnit } from '../../money/index.js';
import type { BillableItem } from './billable-item.js';
import { priceQuantity } from './pricing.js';

/**
 * Proration of a subscription change (docs/architecture.md, "A subscription change's way"), pure. Billing is in arrears: the invoice at the
 * end of a period charges each licensed item's full period at its terms when the period began
 * (its "base"), and a change in between adds lines that turn that into exactly what was used: a
 * credit for the rest of the period at the old quantity and price, a charge for the rest at the
 * new. Time is counted in whole seconds; each line is rounded once, half-up, to the minor unit.
 * Because the base is charged in full, a period's lines never add up to less than zero.
 */

export interface Period {
  start: Date;
  end: Date;
}

export interface ProrationLine {
  description: string;
  subscription_item_id: number;
  product_id: number;
  /** 4 fractional digits: the item's quantity as its invoice line shows it (a flat fee: 1). */
  quantity: string;
  /**
   * The effective price per unit and period the amount was computed from (8 digits, unrounded:
   * unit prices keep their precision): a tiered price's average at that quantity, not the
   * subscribed price. quantity x unit_price is the whole period's amount the line prorates.
   */
  unit_price: string;
  /** Negative for a credit; in the minor unit, at 8 digits. */
  amount: string;
  period_start: string;
  period_end: string;
}

/** The whole seconds in [from, to); a change is timed to the second. */
export function secondsBetween(from: Date, to: Date): bigint {
  return BigInt(Math.floor(to.getTime() / 1000) - Math.floor(from.getTime() / 1000));
}

/** `at` truncated to its second. */
export function toTheSecond(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 1000) * 1000);
}

/**
 * The item priced for one whole period at its quantity, as an invoice line of it would be: the
 * quantity shown, the effective unit price (a tiered price's average, a flat fee's one fee) and
 * the amount (8 digits, before rounding). A proration line shows the quantity and unit price it
 * was computed from, never the subscribed price a tiered item does not use.
 */
function wholePeriod(item: BillableItem): { quantity: string; unit_price: string; amount: bigint } {
  const priced = priceQuantity({ ...item.pricing, unit_price: item.unit_price }, String(item.quantity));
  return { quantity: priced.quantity, unit_price: priced.unit_price, amount: parseMoney(priced.amount) };
}

const day = (instant: Date) => instant.toISOString().slice(0, 10);

/**
 * The lines of changing one item at `at` within `period`: `before` undefined is an added item,
 * `after` undefined a removed one. Metered items get no line (their usage is counted over the time
 * they had, see meteredWindow); one-time items are charged once, in full, when added, and never
 * credited.
 */
export function prorationLinesFor(
  before: BillableItem | undefined,
  after: BillableItem | undefined,
  context: { at: Date; period: Period; currency: string },
): ProrationLine[] {
  const at = toTheSecond(context.at);
  const { period, currency } = context;
  const item = after ?? before;
  if (!item || item.usage_type === 'metered') return [];
  const total = secondsBetween(period.start, period.end);
  const left = secondsBetween(at, period.end);
  if (left <= 0n || total <= 0n) return [];
  const span = { period_start: at.toISOString(), period_end: period.end.toISOString() };
  const dates = `${day(at)} to ${day(new Date(period.end.getTime() - 1))}`;

  if (item.pricing_type === 'one_time') {
    if (before || !after) return [];
    const charge = wholePeriod(after);
    return [
      {
        description: `${after.product_name} (one-time, added ${day(at)})`,
        subscription_item_id: after.subscription_item_id,
        product_id: after.product_id,
        quantity: charge.quantity,
        unit_price: charge.unit_price,
        amount: formatMoney(roundToMinorUnit(charge.amount, currency)),
        ...span,
      },
    ];
  }

  if (before && after && before.quantity === after.quantity && before.unit_price === after.unit_price)
    return [];
  const ratio = { numerator: left, denominator: total };
  const lines: ProrationLine[] = [];
  if (before) {
    const credit = wholePeriod(before);
    lines.push({
      description: `Unused time on ${before.quantity} x ${before.product_name}, ${dates}`,
      subscription_item_id: before.subscription_item_id,
      product_id: before.product_id,
      quantity: credit.quantity,
      unit_price: credit.unit_price,
      amount: formatMoney(-roundToMinorUnit(credit.amount, currency, ratio)),
      ...span,
    });
  }
  if (after) {
    const charge = wholePeriod(after);
    lines.push({
      description: `Remaining time on ${after.quantity} x ${after.product_name}, ${dates}`,
      subscription_item_id: after.subscription_item_id,
      product_id: after.product_id,
      quantity: charge.quantity,
      unit_price: charge.unit_price,
      amount: formatMoney(roundToMinorUnit(charge.amount, currency, ratio)),
      ...span,
    });
  }
  return lines;
}

/** Included units and usage scale (NUMERIC(38, 8)). */
const UNIT_SCALE = 8;

/** x * numerator / denominator at the usage scale, half-up. */
function scaleUnits(units: bigint, numerator: bigint, denominator: bigint): bigint {
  return (2n * units * numerator + denominator) / (2n * denominator);
}

/**
 * A metered item's included units for the part of `period` it covers ([from, to), clamped to the
 * period): prorated like the time, to the second, rounded half-up at the usage scale (8 digits).
 */
export function proratedIncludedUnits(includedUnits: string, covered: Period, period: Period): string {
  const from = covered.start > period.start ? covered.start : period.start;
  const to = covered.end < period.end ? covered.end : period.end;
  const total = secondsBetween(period.start, period.end);
  const part = to > from ? secondsBetween(from, to) : 0n;
  const units = parseScaled(includedUnits, UNIT_SCALE, 'half-even');
  return formatScaled(part >= total ? units : scaleUnits(units, part, total), UNIT_SCALE);
}

/**
 * A metered item's included units for the running period after its included units change from
 * `before` to `after` at `at`: the period's allowance so far (`periodIncluded`) loses the rest of
 * the period at the old allowance and gains it at the new, as licensed items' lines do.
 */
export function blendIncludedUnits(
  periodIncluded: string,
  change: { before: string; after: string; at: Date },
  period: Period,
): string {
  const total = secondsBetween(period.start, period.end);
  const left = secondsBetween(toTheSecond(change.at), period.end);
  const share = (units: string) =>
    scaleUnits(parseScaled(units, UNIT_SCALE, 'half-even'), left > 0n ? left : 0n, total);
  const blended =
    parseScaled(periodIncluded, UNIT_SCALE, 'half-even') - share(change.before) + share(change.after);
  return formatScaled(blended > 0n ? blended : 0n, UNIT_SCALE);
}
