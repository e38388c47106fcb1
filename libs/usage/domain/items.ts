import { Batcher } from '../../batching/index.js';
import type { Queryable } from '../../db/index.js';
import type { BillingPeriod } from '../../schemas/index.js';
import type { ItemSchedule } from './periods.js';

export type UsageType = 'metered' | 'licensed';

/** An item as ingest knows it: metered or not, and its subscription's periods (the counters'). */
export interface KnownItem {
  usageType: UsageType;
  schedule: ItemSchedule;
}

interface CacheEntry {
  usageType: UsageType | undefined;
  schedule: ItemSchedule | undefined;
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
  private readonly inFlight = new Map<string, Promise<KnownItem | undefined>>();
  private readonly lookups: Batcher<{ orgId: number; id: number }, KnownItem | undefined>;

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
  cached(
    orgId: number,
    subscriptionItemId: number,
  ): { usageType: UsageType | undefined; schedule: ItemSchedule | undefined } | undefined {
    const cached = this.cache.get(`${orgId}:${subscriptionItemId}`);
    return cached && cached.expiresAt > (this.options.now ?? Date.now)() ? cached : undefined;
  }

  /** undefined: no such item in this organization (another org's item looks the same). */
  async usageType(orgId: number, subscriptionItemId: number): Promise<UsageType | undefined> {
    return (await this.item(orgId, subscriptionItemId))?.usageType;
  }

  /** The item with its subscription's periods; undefined: no such item in this organization. */
  async item(orgId: number, subscriptionItemId: number): Promise<KnownItem | undefined> {
    const key = `${orgId}:${subscriptionItemId}`;
    const now = (this.options.now ?? Date.now)();
    const cached = this.cache.get(key);
    if (cached && cached.expiresAt > now) return known(cached);
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.lookups
        .submit({ orgId, id: subscriptionItemId })
        .finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    const item = await pending;
    this.remember(key, item, now);
    return item;
  }

  private async lookupMany(items: { orgId: number; id: number }[]): Promise<(KnownItem | undefined)[]> {
    const { rows } = await this.db.query<{
      org_id: number;
      id: number;
      usage_type: UsageType;
      start_date: Date;
      billing_period: BillingPeriod;
      billing_anchor_day: number;
      current_period_start: Date;
      current_period_end: Date;
    }>(
      `SELECT si.org_id, si.id, si.usage_type, s.start_date, s.billing_period, s.billing_anchor_day,
              s.current_period_start, s.current_period_end
         FROM subscription_items si JOIN subscriptions s ON s.org_id = si.org_id AND s.id = si.subscription_id
        WHERE (si.org_id, si.id) IN (SELECT * FROM unnest($1::bigint[], $2::bigint[]))`,
      [items.map((item) => item.orgId), items.map((item) => item.id)],
    );
    const found = new Map(
      rows.map((row) => [
        `${row.org_id}:${row.id}`,
        {
          usageType: row.usage_type,
          schedule: {
            startDateMs: row.start_date.getTime(),
            billingPeriod: row.billing_period,
            anchorDay: row.billing_anchor_day,
            currentPeriodStartMs: row.current_period_start.getTime(),
            currentPeriodEndMs: row.current_period_end.getTime(),
          },
        },
      ]),
    );
    return items.map((item) => found.get(`${item.orgId}:${item.id}`));
  }

  private remember(key: string, item: KnownItem | undefined, now: number): void {
    this.cache.delete(key);
    if (this.cache.size >= this.options.maxEntries) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    const ttl = item ? this.options.ttlMs : this.options.negativeTtlMs;
    this.cache.set(key, { usageType: item?.usageType, schedule: item?.schedule, expiresAt: now + ttl });
  }
}

function known(entry: CacheEntry): KnownItem | undefined {
  return entry.usageType && entry.schedule
    ? { usageType: entry.usageType, schedule: entry.schedule }
    : undefined;
}
