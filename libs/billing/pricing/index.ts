export type { BillableItem, ItemBase } from './billable-item.js';
export {
  billableUsage,
  type PricedLine,
  type PriceTier,
  type ProductPricing,
  priceQuantity,
  tierProblems,
} from './pricing.js';
export {
  blendIncludedUnits,
  type Period,
  type ProrationLine,
  proratedIncludedUnits,
  prorationLinesFor,
  toTheSecond,
} from './proration.js';
