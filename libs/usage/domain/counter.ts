import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { formatScaled, parseScaled } from '../../money/index.js';
import type {
  CountedBucket,
  CounterChange,
  CounterJournal,
  CounterState,
  UsageCounterStore,
} from '../dedup-store/store.js';
import type { SubscriptionItemCache } from './items.js';
import { type ItemSchedule, periodAt } from './periods.js';

/** Quantities are exact to 8 fractional digits (USAGE_QUANTITY_SCALE). */
const SCALE = 8;
const ONE = 10n ** BigInt(SCALE);
/** A whole quantity's text exactly as HINCRBY takes it: no sign, no leading zero, at most 15 digits. */
const PLAIN_WHOLE = /^(?:0|[1-9][0-9]{0,14})$/;
/** How long a rebuild's lease holds before another reader may take it over (its holder died). */
const LEASE_MS = 30_000;
/** How long a reader waits for another's rebuild before answering 503. */
const WAIT_FOR_OTHER_MS = 30_000;

/** One item's period, as the counter is asked for it. */
export interface CounterPeriod {
  orgId: number;
  subscriptionItemId: number;
  startMs: number;
  endMs: number;
}

export interface UsageCounterOptions {
  store: UsageCounterStore;
  db: Database;
  items: Pick<SubscriptionItemCache, 'item'>;
  keyPrefix: string;
  /** USAGE_COUNTER: false only to measure ingest without it (bench); reads then sum Postgres. */
  enabled: boolean;
  /** Resolves true once Postgres holds every event accepted before the call (the pg-sink's catch-up). */
  eventsCaughtUp(timeoutMs: number): Promise<boolean>;
  /**
   * The longest an event reserved before a rebuild's cut may still be on its way to the log (the
   * log's acknowledgement timeout and linger), after which it is appended or released.
   */
  settleMs: number;
  now?: () => number;
}

/**
 * The per-item period counters behind the entitlement check (docs/decisions.md, "Where the
 * entitlement counter lives and why"): `used` of an item's period, read-your-writes in one store
 * round trip. Ingest counts each new event in the script that deduplicates it (reserve), in the
 * counter of the period its timestamp falls in; a released reservation is uncounted and a void
 * subtracted, in the same store. A counter the store does not have (first use, evicted, Redis
 * restarted) is rebuilt exactly from the stored events:
 *
 * 1. cut: delta 0 and a journal of every change from then on (the store's beginRebuild);
 * 2. wait until every event reserved before the cut is appended or released (settleMs) and the
 *    pg-sink holds everything appended (eventsCaughtUp);
 * 3. in one Postgres snapshot taken before the journal is read: base = the period's events minus
 *    the journaled changes the snapshot already reflects (events it holds, voids it shows);
 * 4. set the base, under the rebuild's lease.
 *
 * used = base + delta then counts every event once, whatever ingest did meanwhile.
 */
export class UsageCounter {
  private readonly now: () => number;
  private readonly rebuilding = new Map<string, Promise<bigint>>();
  /** Counters this process had built ahead (prepare), so each is asked for once. */
  private readonly prepared = new Set<string>();
  /**
   * Per item schedule (ingest's item cache holds one object per item): the period last counted
   * in and its key, so the events of a running period cost no calendar work nor key building.
   */
  private readonly lastPeriod = new WeakMap<
    ItemSchedule,
    { orgId: number; subscriptionItemId: number; startMs: number; endMs: number; key: string }
  >();

  constructor(private readonly options: UsageCounterOptions) {
    this.now = options.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.options.enabled;
  }

  keyOf(orgId: number, subscriptionItemId: number, periodStartMs: number): string {
    return `${this.options.keyPrefix}usage:counter:${orgId}:${subscriptionItemId}:${periodStartMs}`;
  }

  /** The counting of a new event (reserve's); asked only while counters are on (`enabled`). */
  eventChange(
    event: {
      orgId: number;
      subscriptionItemId: number;
      idempotencyKey: string;
      quantity: string;
      occurredAtMs: number;
    },
    schedule: ItemSchedule,
  ): CounterChange {
    const key = this.periodKey(event.orgId, event.subscriptionItemId, schedule, event.occurredAtMs);
    const field = `e:${event.idempotencyKey}`;
    // a whole quantity (the usual) is its own whole part: no BigInt on the hot path
    if (PLAIN_WHOLE.test(event.quantity)) return { key, whole: event.quantity, fraction: '0', field };
    return { key, ...parts(parseScaled(event.quantity, SCALE, 'half-even')), field };
  }

  /** The key of the counter of the item's period holding `atMs` (periodAt's, remembered per schedule). */
  private periodKey(orgId: number, subscriptionItemId: number, schedule: ItemSchedule, atMs: number): string {
    const last = this.lastPeriod.get(schedule);
    if (
      last &&
      last.orgId === orgId &&
      last.subscriptionItemId === subscriptionItemId &&
      atMs >= last.startMs &&
      atMs < last.endMs
    )
      return last.key;
    const { startMs, endMs } = periodAt(schedule, atMs);
    const key = this.keyOf(orgId, subscriptionItemId, startMs);
    this.lastPeriod.set(schedule, { orgId, subscriptionItemId, startMs, endMs, key });
    return key;
  }

  /**
   * Subtracts a voided event from its period's counter. Called in the void's transaction, before
   * its commit (so a rebuild whose snapshot shows the void finds it journaled);
   * `undo` puts it back if the transaction then fails.
   */
  async voided(event: {
    id: string;
    orgId: number;
    subscriptionItemId: number;
    quantity: string;
    occurredAtMs: number;
  }): Promise<{ undo(): Promise<void> } | undefined> {
    if (!this.options.enabled) return undefined;
    const item = await this.options.items.item(event.orgId, event.subscriptionItemId);
    if (!item) return undefined;
    const { startMs } = periodAt(item.schedule, event.occurredAtMs);
    const amount = parseScaled(event.quantity, SCALE, 'half-even');
    const key = this.keyOf(event.orgId, event.subscriptionItemId, startMs);
    const field = `v:${event.id}`;
    await this.options.store.adjustCounter({ key, ...parts(-amount), field });
    return {
      undo: () => this.options.store.adjustCounter({ key, ...parts(amount), field: `u:${event.id}` }),
    };
  }

  /**
   * What each item used in its period, exact (1e-8 units): one store round trip when every counter
   * is there; a missing one is rebuilt first (see the class comment).
   */
  async used(periods: readonly CounterPeriod[]): Promise<bigint[]> {
    if (!periods.length) return [];
    if (!this.options.enabled) return this.summed(periods);
    const keys = periods.map((p) => this.keyOf(p.orgId, p.subscriptionItemId, p.startMs));
    return this.usedOf(keys, periods, await this.options.store.readCounters(keys));
  }

  /**
   * `used`, with one request counted against `bucket` in the same store call (the store's
   * readCountersCounting): resolves once the store answered, with the count and, when the request
   * was allowed, a function giving what each item used (a missing counter is rebuilt then).
   */
  async usedCounting(
    periods: readonly CounterPeriod[],
    bucket: CountedBucket,
  ): Promise<{ count: number; allowed: boolean; used(): Promise<bigint[]> }> {
    const keys = this.options.enabled
      ? periods.map((p) => this.keyOf(p.orgId, p.subscriptionItemId, p.startMs))
      : [];
    const { count, allowed, states } = await this.options.store.readCountersCounting(keys, bucket);
    const used = this.options.enabled
      ? () => this.usedOf(keys, periods, states)
      : () => (periods.length ? this.summed(periods) : Promise.resolve([]));
    return { count, allowed, used };
  }

  private usedOf(
    keys: readonly string[],
    periods: readonly CounterPeriod[],
    states: readonly CounterState[],
  ): Promise<bigint[]> {
    return Promise.all(
      states.map((state, i) =>
        state.base !== null
          ? parseScaled(state.base, SCALE, 'half-even') + state.whole * ONE + state.fraction
          : this.rebuildOnce(keys[i]!, periods[i]!),
      ),
    );
  }

  /** USAGE_COUNTER=false: Postgres' sums once the pg-sink caught up. */
  private async summed(periods: readonly CounterPeriod[]): Promise<bigint[]> {
    await this.caughtUp();
    return Promise.all(periods.map((period) => this.sumTotal(this.options.db, period)));
  }

  /**
   * Builds these counters in the background if the store does not have them yet: the next period
   * of items being checked, so the first check after a period ends finds its counter and does not
   * wait for a rebuild. Exact whenever it runs (the class comment); failures are left to the check.
   */
  prepare(periods: readonly CounterPeriod[]): void {
    if (!this.options.enabled) return;
    if (this.prepared.size > 100_000) this.prepared.clear();
    for (const period of periods) {
      const key = this.keyOf(period.orgId, period.subscriptionItemId, period.startMs);
      if (this.prepared.has(key)) continue;
      this.prepared.add(key);
      this.options.store
        .readCounters([key])
        .then(([state]) => (state?.base === null && !state.lease ? this.rebuildOnce(key, period) : undefined))
        .catch(() => this.prepared.delete(key));
    }
  }

  /** Whether the store holds this counter with its base (built). */
  async isBuilt(period: CounterPeriod): Promise<boolean> {
    const key = this.keyOf(period.orgId, period.subscriptionItemId, period.startMs);
    const [state] = await this.options.store.readCounters([key]);
    return state?.base != null;
  }

  /** One rebuild per counter in this process; others here wait for it. */
  private rebuildOnce(key: string, period: CounterPeriod): Promise<bigint> {
    let pending = this.rebuilding.get(key);
    if (!pending) {
      pending = this.rebuild(key, period).finally(() => this.rebuilding.delete(key));
      this.rebuilding.set(key, pending);
    }
    return pending;
  }

  private async rebuild(key: string, period: CounterPeriod): Promise<bigint> {
    const { store } = this.options;
    const giveUpAt = this.now() + WAIT_FOR_OTHER_MS;
    for (;;) {
      const token = randomUUID();
      const now = this.now();
      const begun = await store.beginRebuild(key, token, now + LEASE_MS, now);
      if (begun === 'building') {
        // another process rebuilds it: wait for its base (or for its lease to lapse)
        if (this.now() > giveUpAt) throw unavailable();
        await sleep(25);
        continue;
      }
      if (begun === 'started') {
        let finished: 'done' | 'lost';
        try {
          await sleep(this.options.settleMs);
          await this.caughtUp();
          finished = await this.finish(key, token, period);
        } catch (error) {
          // the next check starts over at once instead of waiting for this lease to lapse
          await store.abandonRebuild(key, token).catch(() => {});
          throw error;
        }
        if (finished === 'lost') continue;
      }
      const [state] = await store.readCounters([key]);
      if (state?.base != null)
        return parseScaled(state.base, SCALE, 'half-even') + state.whole * ONE + state.fraction;
      if (this.now() > giveUpAt) throw unavailable();
    }
  }

  /**
   * Steps 3 and 4 of the class comment. The sums come from one REPEATABLE READ snapshot, taken by
   * its first statement before the journal is read: a change journaled after that read belongs to
   * an event reserved (or a void made) after the snapshot, which Postgres cannot show in it, so
   * the base never counts what the delta counts, however busy the item.
   */
  private async finish(key: string, token: string, period: CounterPeriod): Promise<'done' | 'lost'> {
    const { store, db } = this.options;
    const base = await db.transaction(
      async (tx) => {
        const total = await this.sumTotal(tx, period);
        const journal = await store.readJournal(key);
        return total - (await this.sumReflected(tx, period, journal));
      },
      { isolation: 'repeatable read' },
    );
    return store.finishRebuild(key, token, formatScaled(base, SCALE));
  }

  private async caughtUp(): Promise<void> {
    let caughtUp: boolean;
    try {
      caughtUp = await this.options.eventsCaughtUp(10_000);
    } catch (cause) {
      throw ApiError.serviceUnavailable('Usage counts are being rebuilt; retry shortly.', 1, cause);
    }
    if (!caughtUp) throw unavailable();
  }

  /** The period's events in Postgres, not voided. */
  private async sumTotal(db: Queryable, period: CounterPeriod): Promise<bigint> {
    const { rows } = await db.query<{ total: string }>(
      `SELECT coalesce(sum(quantity), 0)::text AS total FROM usage_events
        WHERE org_id = $1 AND subscription_item_id = $2 AND occurred_at >= $3 AND occurred_at < $4
          AND voided_at IS NULL`,
      [period.orgId, period.subscriptionItemId, new Date(period.startMs), new Date(period.endMs)],
    );
    return parseScaled(rows[0]!.total, SCALE, 'half-even');
  }

  /**
   * What of the journal Postgres already reflects: journaled events it holds (voided or not: the
   * void of one is journaled too), minus journaled voids it shows.
   */
  private async sumReflected(db: Queryable, period: CounterPeriod, journal: CounterJournal): Promise<bigint> {
    const keys: string[] = [];
    const voids: string[] = [];
    for (const field of journal.entries.keys()) {
      if (field.startsWith('e:')) keys.push(field.slice(2));
      else if (field.startsWith('v:')) voids.push(field.slice(2));
    }
    if (!keys.length && !voids.length) return 0n;
    const { rows } = await db.query<{ added: string; voided: string }>(
      `SELECT (SELECT coalesce(sum(quantity), 0)::text FROM usage_events
                WHERE org_id = $1 AND subscription_item_id = $2 AND idempotency_key = ANY($3::text[])) AS added,
              (SELECT coalesce(sum(quantity), 0)::text FROM usage_events
                WHERE org_id = $1 AND subscription_item_id = $2 AND id = ANY($4::uuid[])
                  AND voided_at IS NOT NULL) AS voided`,
      [period.orgId, period.subscriptionItemId, keys, voids],
    );
    const scaled = (text: string) => parseScaled(text, SCALE, 'half-even');
    return scaled(rows[0]!.added) - scaled(rows[0]!.voided);
  }
}

/** An exact quantity (1e-8 units, may be negative) as whole units and 1e-8ths, each an integer's text. */
function parts(amount: bigint): { whole: string; fraction: string } {
  return { whole: (amount / ONE).toString(), fraction: (amount % ONE).toString() };
}

function unavailable(): ApiError {
  return ApiError.serviceUnavailable('Usage counts are being rebuilt; retry shortly.', 1);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
