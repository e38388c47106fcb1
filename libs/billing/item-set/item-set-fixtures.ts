import type { BillableItem } from '../pricing/index.js';
import type { ChangeCatalog, ChangeProduct, ChangingSubscription } from './item-set.js';

/**
 * Builders for billing's unit tests (the item set's, billable-items, period-invoice): a
 * CAD monthly subscription whose running period is March 2026 (31 days, 2,678,400 seconds), its
 * items and the products a change may add.
 */

export const MARCH: ChangingSubscription = {
  id: 40,
  org_id: 1,
  currency: 'CAD',
  billing_period: 'monthly',
  current_period_start: new Date('2026-03-01T00:00:00Z'),
  current_period_end: new Date('2026-04-01T00:00:00Z'),
};

/** Mid-period: 16 days (1,382,400 seconds) of March's 31 are left. */
export const MID_MARCH = new Date('2026-03-16T00:00:00Z');

const LINEAR = {
  pricing_model: 'per_unit',
  pricing_scheme: 'linear',
  pricing_mode: null,
  tiers: [],
} as const;

/** 10.00 a seat a month, licensed. */
export function seats(quantity: number, overrides: Partial<BillableItem> = {}): BillableItem {
  return {
    subscription_item_id: 7,
    product_id: 3,
    product_name: 'Seats',
    unit_label: 'seat',
    currency: 'CAD',
    pricing_type: 'recurring',
    usage_type: 'licensed',
    quantity,
    unit_price: '10.00000000',
    included_units: '0.00000000',
    pricing: { ...LINEAR, tiers: [] },
    started_at: null,
    removed_at: null,
    base: null,
    ...overrides,
  };
}

/** 0.01 a call, metered, with `included` calls a month free. */
export function calls(included: string, overrides: Partial<BillableItem> = {}): BillableItem {
  return {
    ...seats(1),
    subscription_item_id: 8,
    product_id: 4,
    product_name: 'API calls',
    unit_label: 'call',
    pricing_type: 'usage',
    usage_type: 'metered',
    unit_price: '0.01000000',
    included_units: included,
    ...overrides,
  };
}

export function product(id: number, overrides: Partial<ChangeProduct> = {}): ChangeProduct {
  return {
    id,
    name: `Product ${id}`,
    unit_label: 'unit',
    pricing_type: 'recurring',
    ...LINEAR,
    tiers: [],
    unit_price: '15.00000000',
    currency: 'CAD',
    is_active: true,
    default_billing_period: 'monthly',
    ...overrides,
  };
}

/** Analytics seats: 15.00 a month, licensed. */
export const ANALYTICS = product(20, { name: 'Analytics seats' });
/** Onboarding: 750.00 once. */
export const ONBOARDING = product(21, {
  name: 'Onboarding',
  pricing_type: 'one_time',
  unit_price: '750.00000000',
});
/** Storage: 0.50 a GB, metered. */
export const STORAGE = product(22, { name: 'Storage', pricing_type: 'usage', unit_price: '0.50000000' });

export function catalogOf(
  products: readonly ChangeProduct[],
  overrides: Partial<ChangeCatalog> = {},
): ChangeCatalog {
  return {
    products: new Map(products.map((entry) => [entry.id, entry])),
    itemOwners: new Map(),
    newItemIds: [101, 102, 103],
    pendingLines: { sum: '0', largest: '0' },
    ...overrides,
  };
}
