import { Batcher } from '../../batching/index.js';
import type { Queryable } from '../../db/index.js';

export type UsageType = 'metered' | 'licensed';

interface CacheEntry {
  usageType: UsageType | undefined;
  expiresAt: number;
}

/**
 * Whether a subscription item exists in an organization and is metered, cached in-process so the
 * ingest hot path does not query Postgres per event. An item's usage type never changes; entries
 * expire anyway (bounded staleness, bounded memory). Unknown items are cached briefly so a sender
 * with a wrong id does not become a query per event; concurrent misses of one item share one
 * lookup, and the misses of one turn of the event loop (a batch of 1000 new ids) one query.
 */
export class SubscriptionItemCache {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, Promise<UsageType | undefined>>();
  private readonly lookups: Batcher<{ orgId: number; id: number }, UsageType | undefined>;

  constructor(
    private readonly db: Queryable,
    private readonly options: {
      ttlMs: number;
      negativeTtlMs: number;
      maxEntries: number;
      now?: () => number;
    },
  ) {
    this.lookups = new Batcher((items) => this.lookupMany(items), { lingerMs: 0, maxWeight: 1000 });
  }

  /**
   * The cached answer without waiting: `{ usageType }` when the cache knows (usageType undefined:
   * no such item), undefined when it must ask the database (usageType()).
   */
  cached(orgId: number, subscriptionItemId: number): { usageType: UsageType | undefined } | undefined {
    const cached = this.cache.get(`${orgId}:${subscriptionItemId}`);
    return cached && cached.expiresAt > (this.options.now ?? Date.now)() ? cached : undefined;
  }

  /** undefined: no such item in this organization (another org's item looks the same). */
  async usageType(orgId: number, subscriptionItemId: number): Promise<UsageType | undefined> {
    const key = `${orgId}:${subscriptionItemId}`;
    const now = (this.options.now ?? Date.now)();
    const cached = this.cache.get(key);
    if (cached && cached.expiresAt > now) return cached.usageType;
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.lookups
        .submit({ orgId, id: subscriptionItemId })
        .finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    const usageType = await pending;
    this.remember(key, usageType, now);
    return usageType;
  }

  private async lookupMany(items: { orgId: number; id: number }[]): Promise<(UsageType | undefined)[]> {
    const { rows } = await this.db.query<{ org_id: number; id: number; usage_type: UsageType }>(
      `SELECT org_id, id, usage_type FROM subscription_items
        WHERE (org_id, id) IN (SELECT * FROM unnest($1::bigint[], $2::bigint[]))`,
      [items.map((item) => item.orgId), items.map((item) => item.id)],
    );
    const found = new Map(rows.map((row) => [`${row.org_id}:${row.id}`, row.usage_type]));
    return items.map((item) => found.get(`${item.orgId}:${item.id}`));
  }

  private remember(key: string, usageType: UsageType | undefined, now: number): void {
    this.cache.delete(key);
    if (this.cache.size >= this.options.maxEntries) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    const ttl = usageType ? this.options.ttlMs : this.options.negativeTtlMs;
    this.cache.set(key, { usageType, expiresAt: now + ttl });
  }
}
