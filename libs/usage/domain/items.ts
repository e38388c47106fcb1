import { Batcher } from '../../batching/index.js';
import type { Queryable } from '../../db/index.js';
import type { BillingPeriod } from '../../schemas/index.js';
import type { ItemSchedule } from './periods.js';

export type UsageType = 'metered' | 'licensed';

/**
 * What ingest checks of an item: its usage type, and when usage may fall on it: from its start
 * (the subscription's, or the change that added it) until a change removed it, if one did.
 */
export interface ItemLifetime {
  usageType: UsageType | undefined;
  /** Epoch ms; usage dated before it is refused. */
  startedAtMs?: number | undefined;
  /** Epoch ms; usage dated at or after it is refused (a change removed it, or its subscription ended). */
  removedAtMs?: number | undefined;
  /** Its subscription's periods (the entitlement counters'); undefined for no such item. */
  schedule?: ItemSchedule | undefined;
}

/** An item as ingest knows it: metered or not, its lifetime and its subscription's periods. */
export interface KnownItem extends ItemLifetime {
  usageType: UsageType;
  schedule: ItemSchedule;
}

/** How far back each poll of usage_item_changes reads before its last one (the longest commit delay it covers). */
const CHANGE_MARGIN_MS = 30_000;
/**
 * Change rows older than this are deleted by the pollers (any of them: deleting twice is harmless).
 * It must outlast every cache entry read before the change (ttlMs) and the margin, so that a poller
 * that fell behind still finds every change that could concern an entry it holds.
 */
const CHANGES_KEPT_MS = 3_600_000;
/** How often a poller deletes the old change rows. */
const PRUNE_EVERY_MS = 60_000;

interface ChangeWatcher {
  timer: NodeJS.Timeout;
  /** The database's clock at the last poll. */
  readSince: Date | undefined;
  /** Change rows already applied (id -> changed_at ms), kept while the margin may read them again. */
  seen: Map<number, number>;
  polling?: Promise<void> | undefined;
  /** When this poller last deleted old change rows (0: not yet). */
  prunedAtMs: number;
}

interface CacheEntry extends ItemLifetime {
  expiresAt: number;
}

/**
 * Whether a subscription item exists in an organization and is metered, when usage may fall on it
 * and its subscription's periods, cached in-process so the ingest hot path does not query Postgres
 * per event. An item's usage type and start never change; its removal by a change is seen once its
 * entry expires (bounded staleness, docs/decisions.md "Usage outside its item's lifetime is
 * refused"), and entries expire anyway (bounded memory). Unknown items are cached briefly so a
 * sender with a wrong id does not become a query per event; concurrent misses of one item share one
 * lookup, and the misses of one turn of the event loop (a batch of 1000 new ids) one query.
 * `watchChanges` drops items whose lifetime ended (usage_item_changes) within a poll instead.
 */
export class SubscriptionItemCache {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, Promise<ItemLifetime>>();
  private readonly lookups: Batcher<{ orgId: number; id: number }, ItemLifetime>;
  /** Bumped by every forget: a lookup begun before one may have read the row as it was. */
  private forgets = 0;
  private watcher: ChangeWatcher | undefined;

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
   * The cached answer without waiting: the item's lifetime when the cache knows (usageType
   * undefined: no such item), undefined when it must ask the database (lifetime()).
   */
  cached(orgId: number, subscriptionItemId: number): ItemLifetime | undefined {
    const cached = this.cache.get(`${orgId}:${subscriptionItemId}`);
    return cached && cached.expiresAt > (this.options.now ?? Date.now)() ? cached : undefined;
  }

  /** undefined: no such item in this organization (another org's item looks the same). */
  async usageType(orgId: number, subscriptionItemId: number): Promise<UsageType | undefined> {
    return (await this.lifetime(orgId, subscriptionItemId)).usageType;
  }

  /** The item with its subscription's periods; undefined: no such item in this organization. */
  async item(orgId: number, subscriptionItemId: number): Promise<KnownItem | undefined> {
    const lifetime = await this.lifetime(orgId, subscriptionItemId);
    return lifetime.usageType && lifetime.schedule
      ? { ...lifetime, usageType: lifetime.usageType, schedule: lifetime.schedule }
      : undefined;
  }

  /** The item's usage type and lifetime; usageType undefined: no such item in this organization. */
  async lifetime(orgId: number, subscriptionItemId: number): Promise<ItemLifetime> {
    const key = `${orgId}:${subscriptionItemId}`;
    const now = (this.options.now ?? Date.now)();
    const cached = this.cache.get(key);
    if (cached && cached.expiresAt > now) return cached;
    const forgets = this.forgets;
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.lookups
        .submit({ orgId, id: subscriptionItemId })
        .finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    const lifetime = await pending;
    if (forgets === this.forgets) this.remember(key, lifetime, now);
    return lifetime;
  }

  /** Drops these items: the next event of each reads its lifetime again. */
  forget(items: readonly { orgId: number; id: number }[]): void {
    if (items.length === 0) return;
    this.forgets++;
    for (const item of items) {
      const key = `${item.orgId}:${item.id}`;
      this.cache.delete(key);
      // a lookup in flight may have read the row before the change committed
      this.inFlight.delete(key);
    }
  }

  /**
   * Polls usage_item_changes every `intervalMs` and forgets the items whose lifetime ended. Reads
   * back `CHANGE_MARGIN_MS` before its last read: a transaction that wrote its row earlier may
   * commit later (forgetting twice is harmless). A failed poll is retried at the next interval.
   */
  watchChanges(intervalMs: number): void {
    if (this.watcher) return;
    const watcher: ChangeWatcher = {
      readSince: undefined,
      seen: new Map(),
      prunedAtMs: 0,
      timer: setInterval(() => {
        watcher.polling ??= this.pollChanges(watcher)
          .catch(() => {})
          .finally(() => (watcher.polling = undefined));
      }, intervalMs),
    };
    watcher.timer.unref();
    this.watcher = watcher;
  }

  /** Stops watching; waits for a poll in flight. */
  async stopWatching(): Promise<void> {
    const watcher = this.watcher;
    if (!watcher) return;
    this.watcher = undefined;
    clearInterval(watcher.timer);
    await watcher.polling;
  }

  private async pollChanges(watcher: ChangeWatcher): Promise<void> {
    const { rows } = await this.db.query<{
      id: number | null;
      org_id: number;
      subscription_item_id: number;
      changed_at: Date;
      read_at: Date;
    }>(
      `SELECT c.id, c.org_id, c.subscription_item_id, c.changed_at, r.read_at
         FROM (SELECT clock_timestamp() AS read_at) r
         LEFT JOIN usage_item_changes c ON c.changed_at > coalesce($1::timestamptz, r.read_at) - make_interval(secs => $2)`,
      [watcher.readSince ?? null, CHANGE_MARGIN_MS / 1000],
    );
    // each change once: the margin reads the same rows again for a while
    const fresh = rows.filter((row) => row.id !== null && !watcher.seen.has(Number(row.id)));
    for (const row of fresh) watcher.seen.set(Number(row.id), row.changed_at.getTime());
    this.forget(fresh.map((row) => ({ orgId: Number(row.org_id), id: Number(row.subscription_item_id) })));
    const readAt = rows[0]!.read_at;
    watcher.readSince = readAt;
    for (const [id, changedAtMs] of watcher.seen)
      if (changedAtMs <= readAt.getTime() - 2 * CHANGE_MARGIN_MS) watcher.seen.delete(id);
    const nowMs = (this.options.now ?? Date.now)();
    if (nowMs - watcher.prunedAtMs >= PRUNE_EVERY_MS) {
      watcher.prunedAtMs = nowMs;
      const keptMs = Math.max(CHANGES_KEPT_MS, this.options.ttlMs + 2 * CHANGE_MARGIN_MS);
      await this.db.query(
        'DELETE FROM usage_item_changes WHERE changed_at < clock_timestamp() - make_interval(secs => $1)',
        [keptMs / 1000],
      );
    }
  }

  private async lookupMany(items: { orgId: number; id: number }[]): Promise<ItemLifetime[]> {
    const { rows } = await this.db.query<{
      org_id: number;
      id: number;
      usage_type: UsageType;
      started_at: Date | null;
      removed_at: Date | null;
      start_date: Date;
      billing_period: BillingPeriod;
      billing_anchor_day: number;
      current_period_start: Date;
      current_period_end: Date;
    }>(
      `SELECT si.org_id, si.id, si.usage_type, coalesce(si.started_at, s.start_date) AS started_at,
              least(si.removed_at, s.ended_at) AS removed_at,
              s.start_date, s.billing_period, s.billing_anchor_day, s.current_period_start, s.current_period_end
         FROM subscription_items si JOIN subscriptions s ON s.org_id = si.org_id AND s.id = si.subscription_id
        WHERE (si.org_id, si.id) IN (SELECT * FROM unnest($1::bigint[], $2::bigint[]))`,
      [items.map((item) => item.orgId), items.map((item) => item.id)],
    );
    const found = new Map<string, ItemLifetime>(
      rows.map((row) => [
        `${row.org_id}:${row.id}`,
        {
          usageType: row.usage_type,
          startedAtMs: row.started_at?.getTime(),
          removedAtMs: row.removed_at?.getTime(),
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
    return items.map((item) => found.get(`${item.orgId}:${item.id}`) ?? { usageType: undefined });
  }

  private remember(key: string, lifetime: ItemLifetime, now: number): void {
    this.cache.delete(key);
    if (this.cache.size >= this.options.maxEntries) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    const ttl = lifetime.usageType ? this.options.ttlMs : this.options.negativeTtlMs;
    this.cache.set(key, { ...lifetime, expiresAt: now + ttl });
  }
}
