import { formatScaled, parseScaled } from '../../money/index.js';
import type { BillingPeriod } from '../../schemas/index.js';
import type { BillableItem, PriceTier } from '../pricing/index.js';

/**
 * A subscription's item set (docs/decisions.md, "Subscription changes"): the one place where items
 * are kept, re-quantified, added and removed, for an immediate change and for a scheduled
 * one the billing run applies at the boundary. Worked out in memory from what one statement read
 * (changeReadColumns), written by one statement (itemSetWriteCtes): a change is two round trips.
 *
 * - item-rules.ts: the rules every item obeys, for creating a subscription and changing it;
 * - resolve-item-set.ts: a requested set checked against the items and the catalog;
 * - plan-item-set.ts: the planner (what a change writes and charges), pure;
 * - plan-change.ts: a request planned now or for the period end;
 * - item-set-store.ts: the SQL (the items as billing reads them, a change's read and writes);
 * - apply-item-set.ts: a scheduled set applied at its boundary, in the billing run.
 */

/** One entry of a change's `items`: `id` keeps an item, `product_id` adds one. */
export interface ItemSetEntry {
  id?: number | undefined;
  product_id?: number | undefined;
  quantity?: number | undefined;
  included_units?: string | undefined;
  /** undefined: keep the item's (none for an added item); null: clear it. */
  usage_limit?: string | null | undefined;
}

/** An entry checked and completed: what a pending change stores and shows. */
export interface ResolvedEntry {
  /** null: an item to add. */
  id: number | null;
  product_id: number;
  quantity: number;
  included_units: string;
  /** Metered items: the usage limit per period (entitlements); absent: none. */
  usage_limit?: string;
}

export interface ChangingSubscription {
  id: number;
  org_id: number;
  currency: string;
  billing_period: BillingPeriod;
  current_period_start: Date;
  current_period_end: Date;
}

/**
 * How the running period is billed after the change:
 * - `prorate`: its invoice keeps each item's terms from the period start, plus a credit and a
 *   charge line for the rest of the period (metered items: usage and included units by time);
 * - `none`: the same without money lines (the new terms bill from the next period on);
 * - `direct`: nothing of the period is billed at the old terms (a trial, a period not begun, or
 *   a scheduled change at its boundary): the new set simply replaces the old.
 */
export type ChangeMode = 'prorate' | 'none' | 'direct';

/** A product a change adds, as the change reads it. */
export interface ChangeProduct {
  id: number;
  name: string;
  unit_label: string;
  pricing_type: 'one_time' | 'recurring' | 'usage';
  pricing_model: BillableItem['pricing']['pricing_model'];
  pricing_scheme: BillableItem['pricing']['pricing_scheme'];
  pricing_mode: BillableItem['pricing']['pricing_mode'];
  unit_price: string;
  currency: string;
  is_active: boolean;
  default_billing_period: BillingPeriod;
  tiers: PriceTier[];
}

/** What a change reads besides the subscription and its items (changeCatalogColumns). */
export interface ChangeCatalog {
  /** The products the entries add, by id. */
  products: ReadonlyMap<number, ChangeProduct>;
  /** The subscription of each item id the entries name, but not this subscription's removed items. */
  itemOwners: ReadonlyMap<number, number>;
  /** Ids for the items the entries add, one per added entry in their order. */
  newItemIds: readonly number[];
  /** The proration lines already waiting for the running period's invoice: their sum, and the largest. */
  pendingLines: { sum: string; largest: string };
}

const UNIT_SCALE = 8;
export const units = (text: string) => formatScaled(parseScaled(text, UNIT_SCALE, 'half-even'), UNIT_SCALE);
