import type { Database } from '../db/index.js';
import type { Logger } from '../log/index.js';
import type { UsageEventRecord, UsageReadStores, UsageSink, UsageVoidRecord } from '../usage/index.js';
import { type InterestingItem, PolicyInterest } from './interest.js';

/**
 * Policies that act on usage as it is counted (docs/decisions.md, "Guardrails read the usage log"):
 * automatic credit top-ups today, spend alerts next. They stand above usage and billing
 * (libs/README.md): usage never calls them; they read the usage log like the sinks do, through a
 * sink of their own. In the distributed mode the sinks process hands them the `alerts` group's
 * batches, queued: they skip what no policy watches (`reloadMs`) and sweep every watched item
 * (`sweepMs`) for what a process that died took with it (docs/decisions.md, "The guardrails skip
 * what no policy watches, and ride the `alerts` group"); as a consumer group of their own
 * (`sink('evaluated')`) its offsets are committed only once the policies ran over what it read. In
 * the embedded mode it rides the in-process log and runs the policies beside the request, never
 * delaying its 201.
 *
 * A policy sees usage only once it is counted: the evaluator waits for the read-back's `as_of` to
 * pass the newest event it was handed, so the totals the policies read include it.
 */

/** The subscriptions whose usage moved, with their customers. */
export interface TouchedSubscription {
  orgId: number;
  customerId: number;
  subscriptionId: number;
  /** A void of this batch touched one of its items: its usage may have gone down. */
  voided?: boolean;
}

export interface GuardrailPolicy {
  readonly name: string;
  /**
   * The events as they are handed, before any wait: a policy may note what moved (the alerts keep
   * a bound of each item's quantity to skip reads that cannot cross a threshold).
   */
  observe?(events: readonly UsageEventRecord[]): void;
  /**
   * The subscriptions this policy may act on, as a query of `(org_id, subscription_id)` rows
   * (interest.ts). When every policy has one and the evaluator reloads them (`reloadMs`), usage of
   * an item none of them watches is skipped: no wait, no read. Without it, every item is watched.
   */
  readonly watches?: string;
  evaluate(touched: readonly TouchedSubscription[], stores: UsageReadStores): Promise<void>;
}

/** How long the evaluator waits for the read-back to count what it was handed before it goes on. */
const COUNTED_WAIT_MS = 5000;
const COUNTED_POLL_MS = 50;

interface Pending {
  /** Per organization, its touched items whose subscription is read: true when a void touched it. */
  items: Map<number, Map<number, boolean>>;
  /** Touched items of known subscriptions (watched ones): `${orgId}:${subscriptionId}` -> it. */
  known: Map<string, TouchedSubscription>;
  newestRecordedMs: number;
  /** Voided events: the log carries a void before the transaction that voids its row commits. */
  voids: { orgId: number; id: string }[];
  settled: (() => void)[];
}

export class UsageGuardrails {
  private pending: Pending | undefined;
  private running: Promise<void> | undefined;
  private stores: UsageReadStores | undefined;
  private stopped = false;
  /** The items the policies watch, when every policy says which (and reloadMs is set). */
  private readonly interest: PolicyInterest | undefined;
  private reloading: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When every watched item was last evaluated (0: never, so the first load does). */
  private sweptAtMs = 0;

  constructor(
    private readonly deps: {
      db: Database;
      log: Logger;
      policies: readonly GuardrailPolicy[];
      /**
       * Load the items the policies watch this often, and skip the usage of the others
       * (docs/decisions.md, "The guardrails skip what no policy watches"). An item that
       * becomes watched is evaluated at the next load. Unset: every item is evaluated.
       */
      reloadMs?: number;
      /**
       * Evaluate every watched item this often (at a load), besides at the first load. For a sink
       * whose batches are done before the policies ran over them (`sink('queued')` on a consumer
       * group): what a process that died took with it, on partitions a live process took over,
       * is evaluated at the latest then.
       */
      sweepMs?: number;
    },
  ) {
    const queries = deps.policies.map((policy) => policy.watches);
    if (deps.reloadMs && queries.every((query): query is string => query !== undefined))
      this.interest = new PolicyInterest(deps.db, queries);
  }

  /** The read-back's stores, once the process has them (they come with its usage pipeline). */
  attach(stores: UsageReadStores): void {
    this.stores = stores;
    if (this.interest && !this.timer) {
      this.reload();
      this.timer = setInterval(() => this.reload(), this.deps.reloadMs);
      this.timer.unref();
    }
    if (this.pending) this.kick();
  }

  /**
   * Loads the watched items again; the newly watched are evaluated once, after the read-back
   * counts everything recorded until now: the usage they received while skipped (handed before
   * now, so recorded before now) is then read, and whatever they crossed meanwhile is acted on.
   */
  private reload(): void {
    if (this.reloading || this.stopped || !this.interest) return;
    this.reloading = this.interest
      .reload()
      .then((added) => {
        const now = Date.now();
        const sweep = this.deps.sweepMs !== undefined && now - this.sweptAtMs >= this.deps.sweepMs;
        if (sweep) this.sweptAtMs = now;
        const look = sweep ? this.interest!.all() : added;
        if (!look.length || this.stopped) return;
        const pending = this.pendingBatch();
        for (const item of look) touch(pending, item.orgId, item, true);
        pending.newestRecordedMs = Math.max(pending.newestRecordedMs, now);
        this.kick();
      })
      .catch((error) => this.deps.log.error({ err: error }, 'guardrails: loading the watched items failed'))
      .finally(() => {
        this.reloading = undefined;
      });
  }

  private pendingBatch(): Pending {
    this.pending ??= { items: new Map(), known: new Map(), newestRecordedMs: 0, voids: [], settled: [] };
    return this.pending;
  }

  /**
   * The sink the usage log feeds. `settle: 'evaluated'` resolves a write once the policies ran
   * over it (a Kafka consumer then commits); `'queued'` at once (the in-process log, the sinks'
   * `alerts` group: with `sweepMs`).
   */
  sink(settle: 'evaluated' | 'queued'): UsageSink {
    return {
      name: 'guardrails',
      write: (events) => this.hand(events, settle),
      writeVoids: (voids) =>
        this.hand(
          voids.map((v: UsageVoidRecord) => v.event),
          settle,
          true,
        ),
    };
  }

  /** Finishes what was handed, then stops. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.reloading;
    await this.running;
  }

  private hand(
    events: readonly UsageEventRecord[],
    settle: 'evaluated' | 'queued',
    voided = false,
  ): Promise<void> {
    if (events.length === 0 || this.stopped) return Promise.resolve();
    const interest = this.interest?.loaded ? this.interest : undefined;
    // an item no policy watches is skipped: its usage moves nothing they act on (once watched,
    // the reload evaluates it)
    const watched = interest
      ? events.filter((event) => interest.get(event.orgId, event.subscriptionItemId) !== undefined)
      : events;
    if (watched.length === 0) return Promise.resolve();
    const pending = this.pendingBatch();
    if (!voided) for (const policy of this.deps.policies) policy.observe?.(watched);
    for (const event of watched) {
      if (voided) pending.voids.push({ orgId: event.orgId, id: event.id });
      touch(
        pending,
        event.orgId,
        interest?.get(event.orgId, event.subscriptionItemId) ?? event.subscriptionItemId,
        voided,
      );
      if (event.recordedAtMs > pending.newestRecordedMs) pending.newestRecordedMs = event.recordedAtMs;
    }
    const evaluated = new Promise<void>((resolve) => pending.settled.push(resolve));
    this.kick();
    return settle === 'evaluated' ? evaluated : Promise.resolve();
  }

  /** One evaluation at a time; what arrives meanwhile is gathered for the next. */
  private kick(): void {
    if (this.running || !this.stores) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.pending && !this.stopped) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.pending) {
      const batch = this.pending;
      this.pending = undefined;
      try {
        await this.evaluate(batch);
      } catch (error) {
        // a policy that failed is retried by the next usage that moves the same customers
        this.deps.log.error({ err: error }, 'guardrails evaluation failed');
      } finally {
        for (const settled of batch.settled) settled();
      }
    }
  }

  private async evaluate(batch: Pending): Promise<void> {
    const stores = this.stores!;
    const deadline = Date.now() + COUNTED_WAIT_MS;
    while ((await stores.asOf()).getTime() < batch.newestRecordedMs && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, COUNTED_POLL_MS));
    }
    // a void whose transaction has not committed yet would be read as still counting; one that
    // rolled back never shows, and the usage is then read as it stands
    while (!(await this.voidsCommitted(batch.voids)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, COUNTED_POLL_MS));
    }
    const touched = [...batch.known.values()];
    if (batch.items.size) {
      for (const subscription of await this.subscriptionsOf(batch.items)) {
        const key = `${subscription.orgId}:${subscription.subscriptionId}`;
        const known = batch.known.get(key);
        if (!known) touched.push(subscription);
        else if (subscription.voided) known.voided = true;
      }
    }
    if (touched.length === 0) return;
    for (const policy of this.deps.policies) await policy.evaluate(touched, stores);
  }

  private async voidsCommitted(voids: readonly { orgId: number; id: string }[]): Promise<boolean> {
    if (voids.length === 0) return true;
    const { rows } = await this.deps.db.query<{ pending: boolean }>(
      `SELECT EXISTS (
         SELECT 1 FROM unnest($1::bigint[], $2::uuid[]) AS k(org_id, id)
          WHERE NOT EXISTS (SELECT 1 FROM usage_events e
                             WHERE e.org_id = k.org_id AND e.id = k.id AND e.voided_at IS NOT NULL)) AS pending`,
      [voids.map((v) => v.orgId), voids.map((v) => v.id)],
    );
    return !rows[0]!.pending;
  }

  private async subscriptionsOf(items: Map<number, Map<number, boolean>>): Promise<TouchedSubscription[]> {
    const orgIds: number[] = [];
    const itemIds: number[] = [];
    const voided: boolean[] = [];
    for (const [orgId, ids] of items) {
      for (const [id, wasVoided] of ids) {
        orgIds.push(orgId);
        itemIds.push(id);
        voided.push(wasVoided);
      }
    }
    const { rows } = await this.deps.db.query<{
      org_id: number;
      customer_id: number;
      subscription_id: number;
      voided: boolean;
    }>(
      `SELECT s.org_id, s.customer_id, s.id AS subscription_id, bool_or(k.voided) AS voided
         FROM unnest($1::bigint[], $2::bigint[], $3::boolean[]) AS k(org_id, item_id, voided)
         JOIN subscription_items si ON si.org_id = k.org_id AND si.id = k.item_id
         JOIN subscriptions s ON s.org_id = si.org_id AND s.id = si.subscription_id
        GROUP BY s.org_id, s.customer_id, s.id`,
      [orgIds, itemIds, voided],
    );
    return rows.map((row) => ({
      orgId: row.org_id,
      customerId: row.customer_id,
      subscriptionId: row.subscription_id,
      ...(row.voided ? { voided: true } : {}),
    }));
  }
}

/**
 * Adds a touched item to a batch: a watched item by its subscription (known), any other by its id
 * (its subscription is read with the batch).
 */
function touch(pending: Pending, orgId: number, item: number | InterestingItem, voided: boolean): void {
  if (typeof item === 'number') {
    const items = pending.items.get(orgId) ?? new Map<number, boolean>();
    items.set(item, voided || (items.get(item) ?? false));
    pending.items.set(orgId, items);
    return;
  }
  const key = `${orgId}:${item.subscriptionId}`;
  const known = pending.known.get(key);
  if (known) {
    if (voided) known.voided = true;
  } else {
    pending.known.set(key, {
      orgId,
      customerId: item.customerId,
      subscriptionId: item.subscriptionId,
      ...(voided ? { voided: true } : {}),
    });
  }
}
