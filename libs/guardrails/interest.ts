import type { Queryable } from '../db/index.js';

/** An item some policy may act on, with what the evaluator needs of it (fixed for an item's life). */
export interface InterestingItem {
  subscriptionId: number;
  customerId: number;
}

export type WatchedItem = InterestingItem & { orgId: number; itemId: number };

/**
 * The subscription items the policies may act on, held in memory and loaded again every reload
 * (docs/decisions.md, "The guardrails skip what no policy watches"). Each policy names the
 * subscriptions it watches as a query of `(org_id, subscription_id)` rows; an item is interesting
 * when its subscription is in one of them. An item's subscription and that subscription's customer
 * never change, so a loaded item also answers which subscription its usage touches.
 */
export class PolicyInterest {
  /** orgId -> itemId -> its subscription (numbers: no key built per event); undefined until the first load. */
  private items: Map<number, Map<number, WatchedItem>> | undefined;

  constructor(
    private readonly db: Queryable,
    /** Each policy's query of the subscriptions it watches: `(org_id, subscription_id)` rows. */
    private readonly queries: readonly string[],
  ) {}

  get loaded(): boolean {
    return this.items !== undefined;
  }

  /** The item's subscription if some policy watches it; undefined if none does (or before the first load). */
  get(orgId: number, itemId: number): InterestingItem | undefined {
    return this.items?.get(orgId)?.get(itemId);
  }

  /** Every watched item, as last loaded. */
  all(): WatchedItem[] {
    const all: WatchedItem[] = [];
    for (const items of this.items?.values() ?? []) all.push(...items.values());
    return all;
  }

  /**
   * Loads the watched items again. Returns the items watched now and not at the last load (every
   * one at the first): usage they received while skipped was never evaluated.
   */
  async reload(): Promise<WatchedItem[]> {
    const { rows } = await this.db.query<{
      org_id: string | number;
      item_id: string | number;
      subscription_id: string | number;
      customer_id: string | number;
    }>(
      `SELECT si.org_id, si.id AS item_id, s.id AS subscription_id, s.customer_id
         FROM subscription_items si
         JOIN subscriptions s ON s.org_id = si.org_id AND s.id = si.subscription_id
        WHERE (s.org_id, s.id) IN (${this.queries.map((query) => `(${query})`).join(' UNION ')})`,
    );
    const before = this.items;
    const items = new Map<number, Map<number, WatchedItem>>();
    const added: WatchedItem[] = [];
    for (const row of rows) {
      const item = {
        orgId: Number(row.org_id),
        itemId: Number(row.item_id),
        subscriptionId: Number(row.subscription_id),
        customerId: Number(row.customer_id),
      };
      let org = items.get(item.orgId);
      if (!org) {
        org = new Map();
        items.set(item.orgId, org);
      }
      org.set(item.itemId, item);
      if (!before?.get(item.orgId)?.has(item.itemId)) added.push(item);
    }
    this.items = items;
    return added;
  }
}
