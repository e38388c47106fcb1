import {
  divideRoundHalfEven,
  formatMoney,
  formatQuantity,
  formatScaled,
  MONEY_SCALE,
  parseScaled,
  QUANTITY_SCALE,
  rescale,
} from '../../money/index.js';

/**
 * What a quantity costs under a product's price (docs/architecture.md, "A billing run's way"), in exact decimals. Pure: the
 * billing run, tests and any future price preview share it.
 *
 * Quantities are first rounded half-even to 4 fractional digits (what the invoice shows), and the
 * line is priced from that shown quantity, so quantity x unit price on the printed invoice adds
 * up. Intermediate products stay exact; only the line total is rounded, half-even, to 8 digits.
 */

export interface PriceTier {
  /** Inclusive upper bound of the tier in units; null for the open-ended last tier. */
  up_to: string | null;
  unit_price: string;
  flat_fee: string;
}

export interface ProductPricing {
  pricing_model: 'flat_fee' | 'per_unit';
  pricing_scheme: 'linear' | 'tiered';
  pricing_mode: 'flat' | 'volume' | 'graduated' | null;
  /** The linear price: per unit (per_unit) or per period (flat_fee). */
  unit_price: string;
  /** Ascending; used when pricing_scheme is tiered. */
  tiers: readonly PriceTier[];
}

export interface PricedLine {
  /** 4 fractional digits. */
  quantity: string;
  /** 8 fractional digits; for tiered prices the effective average (line total / quantity). */
  unit_price: string;
  /** 8 fractional digits, rounded half-even. */
  amount: string;
}

/** Tier bounds and usage quantities are compared at the usage scale (NUMERIC(38, 8)). */
const UNIT_SCALE = 8;
const ZERO_MONEY = formatMoney(0n);

export function priceQuantity(pricing: ProductPricing, quantity: string): PricedLine {
  const shown = parseScaled(quantity, QUANTITY_SCALE, 'half-even');
  if (shown < 0n) throw new RangeError(`a quantity cannot be negative: ${quantity}`);
  const price = parseScaled(pricing.unit_price, MONEY_SCALE);

  if (pricing.pricing_scheme === 'linear') {
    if (pricing.pricing_model === 'flat_fee') {
      // one fee per period, whatever the quantity; nothing when nothing was used
      return shown === 0n
        ? { quantity: formatQuantity(0n), unit_price: formatMoney(price), amount: ZERO_MONEY }
        : {
            quantity: formatQuantity(10n ** BigInt(QUANTITY_SCALE)),
            unit_price: formatMoney(price),
            amount: formatMoney(price),
          };
    }
    const exact = shown * price; // scale 4 + 8
    return {
      quantity: formatQuantity(shown),
      unit_price: formatMoney(price),
      amount: formatMoney(rescale(exact, QUANTITY_SCALE + MONEY_SCALE, MONEY_SCALE)),
    };
  }

  const tiers = pricing.tiers.map((tier) => ({
    upTo: tier.up_to === null ? null : parseScaled(tier.up_to, UNIT_SCALE),
    unitPrice: parseScaled(tier.unit_price, MONEY_SCALE),
    flatFee: parseScaled(tier.flat_fee, MONEY_SCALE),
  }));
  if (tiers.length === 0) throw new RangeError('a tiered price needs at least one tier');
  if (shown === 0n) {
    return { quantity: formatQuantity(0n), unit_price: ZERO_MONEY, amount: ZERO_MONEY };
  }

  const units = rescale(shown, QUANTITY_SCALE, UNIT_SCALE);
  const EXACT = UNIT_SCALE + MONEY_SCALE;
  const feeAtExact = (fee: bigint) => fee * 10n ** BigInt(UNIT_SCALE);
  let exact = 0n;
  switch (pricing.pricing_mode) {
    case 'volume': {
      // every unit at the price of the tier the whole quantity falls in
      const tier = tierContaining(tiers, units);
      exact = units * tier.unitPrice + feeAtExact(tier.flatFee);
      break;
    }
    case 'flat': {
      // stair-step: the flat fee of the tier the quantity falls in, nothing per unit
      exact = feeAtExact(tierContaining(tiers, units).flatFee);
      break;
    }
    case 'graduated': {
      // each tier prices the units that fall inside it; its flat fee applies once it is entered
      let lower = 0n;
      for (const tier of tiers) {
        const upper = tier.upTo === null || tier.upTo > units ? units : tier.upTo;
        if (upper <= lower) break;
        exact += (upper - lower) * tier.unitPrice + feeAtExact(tier.flatFee);
        lower = upper;
        if (upper === units) break;
      }
      break;
    }
    default:
      throw new RangeError(`a tiered price needs a pricing mode (flat, volume or graduated)`);
  }
  const amount = rescale(exact, EXACT, MONEY_SCALE);
  return {
    quantity: formatQuantity(shown),
    // amount (scale 8) / quantity (scale 4) at scale 8
    unit_price: formatMoney(divideRoundHalfEven(amount * 10n ** BigInt(QUANTITY_SCALE), shown)),
    amount: formatMoney(amount),
  };
}

/** The first tier whose bound is at or above the quantity; the last tier beyond every bound. */
function tierContaining<T extends { upTo: bigint | null }>(tiers: readonly T[], units: bigint): T {
  return tiers.find((tier) => tier.upTo === null || units <= tier.upTo) ?? tiers[tiers.length - 1]!;
}

/** Metered usage above the included units, never below zero (8 fractional digits). */
export function billableUsage(usage: string, includedUnits: string): string {
  const billable =
    parseScaled(usage, UNIT_SCALE, 'half-even') - parseScaled(includedUnits, UNIT_SCALE, 'half-even');
  return formatScaled(billable > 0n ? billable : 0n, UNIT_SCALE);
}

/**
 * Problems with a tier list for a tiered price, as [index, message] pairs: ascending strictly
 * increasing bounds, only the last tier open-ended (and it must be).
 */
export function tierProblems(
  tiers: readonly PriceTier[],
): { index: number; field: string; message: string }[] {
  const problems: { index: number; field: string; message: string }[] = [];
  if (tiers.length === 0)
    return [{ index: -1, field: 'tiers', message: 'A tiered price needs at least one tier.' }];
  let previous = 0n;
  tiers.forEach((tier, index) => {
    const last = index === tiers.length - 1;
    if (tier.up_to === null) {
      if (!last)
        problems.push({
          index,
          field: 'up_to',
          message: 'Only the last tier may be open-ended (up_to null).',
        });
      return;
    }
    if (last) {
      problems.push({ index, field: 'up_to', message: 'The last tier must be open-ended (up_to null).' });
    }
    const bound = parseScaled(tier.up_to, UNIT_SCALE);
    if (bound <= previous) {
      problems.push({
        index,
        field: 'up_to',
        message: 'Tier bounds must be positive and strictly increasing.',
      });
    }
    previous = bound;
  });
  return problems;
}
