import type { ProductPricing } from './pricing.js';

/**
 * A subscription item as billing prices it: its product's price structure, the subscribed price
 * and, once a change touched it in a period, the terms that period began with.
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
  /** Metered items: the usage limit of a period (entitlements; no billing term); null: none. */
  usage_limit?: string | null;
  /** The product's price structure; tiers come from the product. */
  pricing: Omit<ProductPricing, 'unit_price'>;
  /** Added by a subscription change at this instant (docs/architecture.md, "A subscription change's way"); null: since the start. */
  started_at?: Date | null;
  /** Removed by a subscription change at this instant: billed for that period, never after. */
  removed_at?: Date | null;
  /** The item's terms when the period starting at `period_start` began (set by its first change). */
  base?: ItemBase | null;
}

export interface ItemBase {
  period_start: Date;
  quantity: number;
  unit_price: string;
  included_units: string;
}
