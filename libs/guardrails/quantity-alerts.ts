import type { Database } from '../db/index.js';
import type { Logger } from '../log/index.js';
import { alertReads } from '../observability/index.js';
import type { UsageEventRecord, UsageReadStores, UsageSink, UsageVoidRecord } from '../usage/index.js';
import { type AlertState, alertStatesOf, evaluateAlerts, quantityAlertStates } from './alerts.js';
import { RecentUsage } from './recent-usage.js';

export interface QuantityAlertsOptions {
  db: Database;
  log: Logger;
  /**
   * The longest an event may take from its `recordedAt` to its 201 (the log's acknowledgement
   * timeout and linger, and a margin): an event a reading with `as_of` A does not count was
   * recorded after A - settleMs.
   */
  settleMs: number;
  /** An alert skipped this long is read (its `value`, and events a partition move hid). */
  refreshMs?: number;
  /** How often the alerts written since the last load are loaded (new, moved elsewhere); all of them every refreshMs. */
  reloadMs?: number;
  /** How far before the last load a reload looks for written alerts (default CHANGE_MARGIN_MS). */
  changeMarginMs?: number;
  /** How long a batch waits for a reading that settles its suspects (default FINAL_WAIT_MS). */
  finalWaitMs?: number;
}

/**
 * How long the quantities read on the log are kept (a bound reaching further back reads instead):
 * longer than the watermark lags on a saturated machine, or every bound is undrawable.
 */
const KEEP_MS = 180_000;
/** A suspect is read again this often until a reading counts what was handed... */
const RETRY_MS = 100;
/** ...for at most this long, holding its batch (then every reload reads it, until one settles it). */
const FINAL_WAIT_MS = 10_000;
/**
 * How far before the last load a reload looks for written alerts: a transaction that wrote one
 * (updated_at is its start) may commit after a load that began later; and the api's clock and
 * this process's may differ a little. Every refreshMs the reload reads every alert anyway.
 */
const CHANGE_MARGIN_MS = 10_000;
/** How long a batch of voids waits for the transactions that void its rows to commit. */
const VOID_WAIT_MS = 5000;

/**
 * The `usage_quantity` alerts of the distributed mode, as a consumer group of their own (`alerts`,
 * docs/decisions.md "Quantity alerts are read only near their threshold, in a group that does
 * not wait"). The armed alerts are held in memory by item (every reloadMs those written since
 * the last load, every refreshMs all of them), so an event of an item without an alert costs a
 * map lookup, and one of an item with an alert the bound:
 * its last reading plus the positive quantities this process read on the log for the item since
 * that reading's `as_of` less settleMs. An OK alert whose bound is below its threshold cannot have
 * crossed and is not read. A suspect (the bound reaches the threshold, a void of its item, or no
 * bound can be drawn: no reading, one older than this process reading the whole log, which a
 * member of a group of several never does, or than what it keeps) is read at once through the
 * read-back, without waiting for the watermark, and again every RETRY_MS until it fired, a
 * reading's `as_of` passed the moment its events were handed, or a new reading draws a bound below
 * the threshold (the bound counts the events handed): only then does the write resolve (and the
 * runner commit the batch's offsets). Postgres only ever holds logged events, so a
 * reading at the threshold is a real crossing, and the move is conditional (alerts.ts): once.
 */
export class QuantityAlerts {
  private readonly recent = new RecentUsage();
  /**
   * Since when this process has read every event of the log (its start, or the assignment that
   * gave its group member every partition; undefined while it reads only some): a bound rests only
   * on a reading whose `as_of` less settleMs is past it. Events before it may have been read by
   * another process, and with several members the unkeyed log spreads an item's usage over them.
   */
  private wholeLogSinceMs: number | undefined = Date.now();
  private readonly refreshMs: number;
  private readonly reloadMs: number;
  /** orgId -> itemId -> its armed alerts, as last loaded or read (numbers: no key built per event). */
  private byItem = new Map<number, Map<number, AlertState[]>>();
  private byId = new Map<string, AlertState>();
  private loadedAtMs = 0;
  private wholeLoadedAtMs = 0;
  /** Alerts skipped since their last read, and since when. */
  private readonly skippedSince = new Map<string, number>();
  /**
   * Suspects no reading settled while their batch waited, and the instant a reading must count
   * up to: read at every reload until one settles them (the pg-sink may write the crossing long
   * after the batch let its offsets go, and nothing else would read the alert again).
   */
  private readonly unsettled = new Map<string, number>();
  private stores: UsageReadStores | undefined;
  /** All work, one piece at a time: batches, voids and the idle reload. */
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: QuantityAlertsOptions) {
    this.refreshMs = options.refreshMs ?? 30_000;
    this.reloadMs = options.reloadMs ?? 2000;
  }

  attach(stores: UsageReadStores): void {
    this.stores = stores;
    // while no batch comes, alerts moved elsewhere (created, reset, resolved) are still looked at
    this.timer = setInterval(() => {
      if (!this.stopped && Date.now() - this.loadedAtMs >= this.reloadMs)
        this.enqueue(() => this.evaluate([], [], 0)).catch(() => {});
    }, this.reloadMs);
    this.timer.unref();
  }

  sink(): UsageSink {
    return {
      name: 'alerts',
      assigned: (wholeLog) => {
        this.wholeLogSinceMs = wholeLog ? Date.now() : undefined;
      },
      write: (events) => {
        this.recent.add(events);
        const handed = Date.now();
        return this.enqueue(() => this.evaluate(events, [], handed));
      },
      writeVoids: (voids) => this.enqueue(() => this.onVoids(voids)),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.chain;
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    const run = this.chain.then(work);
    // a failed batch fails its write (the runner retries it); the chain goes on
    this.chain = run.catch((error) => this.options.log.error({ err: error }, 'quantity alerts failed'));
    return run;
  }

  private async onVoids(voids: readonly UsageVoidRecord[]): Promise<void> {
    if (!voids.length) return;
    const deadline = Date.now() + VOID_WAIT_MS;
    // a void is on the log before its transaction commits; one rolled back never shows
    while (!(await this.voidsCommitted(voids)) && Date.now() < deadline) await sleep(50);
    await this.evaluate(
      [],
      voids.map((v) => v.event),
      Date.now(),
    );
  }

  /**
   * Decides, reads and settles the alerts of the items of `events` and `voided`, and of the alerts
   * a reload found changed or skipped too long.
   */
  private async evaluate(
    events: readonly UsageEventRecord[],
    voided: readonly UsageEventRecord[],
    handed: number,
  ): Promise<void> {
    const stores = this.stores;
    if (!stores) throw new Error('quantity alerts: no read stores attached');
    const atMs = Date.now();
    const decisions = new Map<string, 'suspect' | 'refresh'>();
    if (atMs - this.loadedAtMs >= this.reloadMs) {
      for (const [id, decision] of await this.reload(atMs)) decisions.set(id, decision);
    }
    // each alerted item once per batch
    const seen = new Set<AlertState[]>();
    for (const event of events) {
      const alerts = this.byItem.get(event.orgId)?.get(event.subscriptionItemId);
      if (!alerts || seen.has(alerts)) continue;
      seen.add(alerts);
      for (const alert of alerts) {
        const decision = this.decide(alert, atMs);
        if (decision === 'skip') {
          if (!this.skippedSince.has(alert.id)) this.skippedSince.set(alert.id, atMs);
        } else if (decisions.get(alert.id) !== 'suspect') decisions.set(alert.id, decision);
      }
    }
    for (const event of voided) {
      for (const alert of this.byItem.get(event.orgId)?.get(event.subscriptionItemId) ?? [])
        decisions.set(alert.id, 'suspect');
    }
    this.recent.prune(atMs - KEEP_MS);
    if (!decisions.size) return;
    const read = [...decisions.keys()];
    for (const id of read) this.skippedSince.delete(id);
    await evaluateAlerts(this.options.db, stores, { alertIds: read });
    const suspects = read.filter((id) => decisions.get(id) === 'suspect');
    alertReads.inc({ reason: 'suspect' }, suspects.length);
    alertReads.inc({ reason: 'refresh' }, read.length - suspects.length);
    // every event this process read was handed by atMs: a reading at or after it counts them all
    await this.settle(suspects, Math.max(handed, atMs), stores);
    const states = await alertStatesOf(this.options.db, [], read);
    for (const state of states) {
      const until = this.unsettled.get(state.id);
      if (until !== undefined && this.settled(state, until)) this.unsettled.delete(state.id);
    }
    this.remember(states);
  }

  /** Fired, read by a reading that counts everything handed before `handed`, or bounded below. */
  private settled(state: AlertState, handed: number): boolean {
    return (
      state.status === 'TRIGGERED' ||
      (state.evaluatedAsOfMs ?? 0) >= handed ||
      this.decide(state, Date.now()) === 'skip'
    );
  }

  /**
   * 'suspect': read until final; 'skip'. (Staleness is the reload's: an alert skipped refreshMs
   * is read then; not the reading's `as_of`, which lags with the watermark.)
   */
  private decide(alert: AlertState, _atMs: number): 'suspect' | 'skip' {
    if (alert.subscriptionItemId === null) return 'skip';
    if (alert.value === null || alert.evaluatedAsOfMs === null) return 'suspect';
    const from = alert.evaluatedAsOfMs - this.options.settleMs;
    const since =
      this.wholeLogSinceMs === undefined || from < this.wholeLogSinceMs
        ? undefined
        : this.recent.since(alert.orgId, alert.subscriptionItemId, from);
    if (since === undefined) return 'suspect';
    // TRIGGERED in its period: only a void or a new period moves it back (a reload sees either)
    if (alert.status === 'TRIGGERED') return 'skip';
    // +1: the reading's text rounded to 1e-8
    return alert.value + since + 1n >= alert.threshold ? 'suspect' : 'skip';
  }

  /**
   * Loads the armed alerts again: those written since the last load (less CHANGE_MARGIN_MS), and
   * every one each refreshMs (which also forgets the deleted). Returns what must be looked at:
   * alerts new or changed since the last load (every OK one at the first), decided now (a crossing
   * may have come while they were not here, or not as they are), and alerts skipped longer than
   * refreshMs (read: events another process read, on a partition that moved, are not in this
   * process's bound).
   */
  private async reload(atMs: number): Promise<Map<string, 'suspect' | 'refresh'>> {
    const first = this.loadedAtMs === 0;
    const whole = first || atMs - this.wholeLoadedAtMs >= this.refreshMs;
    const alerts = await quantityAlertStates(
      this.options.db,
      whole ? undefined : new Date(this.loadedAtMs - (this.options.changeMarginMs ?? CHANGE_MARGIN_MS)),
    );
    const look = new Map<string, 'suspect' | 'refresh'>();
    for (const alert of alerts) {
      const before = this.byId.get(alert.id);
      const changed =
        !before ||
        before.status !== alert.status ||
        before.value !== alert.value ||
        before.evaluatedAsOfMs !== alert.evaluatedAsOfMs;
      // at the first load, every OK alert: a batch read before this process started may have
      // committed the crossing of an alert armed after that process last loaded
      if (first ? alert.status === 'OK' : changed) {
        const decision = this.decide(alert, atMs);
        if (decision !== 'skip') look.set(alert.id, decision);
        // skipped here as on the event path: its value is brought up to date after refreshMs
        else if (!this.skippedSince.has(alert.id)) this.skippedSince.set(alert.id, atMs);
      }
    }
    if (whole) {
      this.byId = new Map();
      this.byItem = new Map();
      this.wholeLoadedAtMs = atMs;
    }
    this.remember(alerts);
    for (const [id, skipped] of this.skippedSince) {
      if (!this.byId.has(id)) this.skippedSince.delete(id);
      else if (skipped <= atMs - this.refreshMs && !look.has(id)) look.set(id, 'refresh');
    }
    for (const id of this.unsettled.keys()) {
      if (!this.byId.has(id)) this.unsettled.delete(id);
      else if (!look.has(id)) look.set(id, 'refresh');
    }
    this.loadedAtMs = atMs;
    return look;
  }

  private remember(alerts: readonly AlertState[]): void {
    for (const alert of alerts) {
      if (alert.metric !== 'usage_quantity' || alert.subscriptionItemId === null) continue;
      const known = this.byId.get(alert.id);
      this.byId.set(alert.id, alert);
      let items = this.byItem.get(alert.orgId);
      if (!items) {
        items = new Map();
        this.byItem.set(alert.orgId, items);
      }
      const list = items.get(alert.subscriptionItemId) ?? [];
      items.set(
        alert.subscriptionItemId,
        known ? list.map((a) => (a.id === alert.id ? alert : a)) : [...list, alert],
      );
    }
  }

  /**
   * Reads the suspects again until each fired, was read by a reading that counts everything
   * handed before `handed` (as_of at or after it), or has a reading whose bound shows it below its
   * threshold; at most FINAL_WAIT_MS. (Waiting for the watermark alone would re-read every alert a
   * process meets first, at each of its first batches, while the watermark lags under load.)
   */
  private async settle(suspects: readonly string[], handed: number, stores: UsageReadStores) {
    const deadline = Date.now() + (this.options.finalWaitMs ?? FINAL_WAIT_MS);
    let open = [...suspects];
    while (open.length) {
      const states = await alertStatesOf(this.options.db, [], open);
      // (a new reading's bound counts every event this process read, those handed included)
      open = states.filter((s) => !this.settled(s, handed)).map((s) => s.id);
      if (!open.length) return;
      if (Date.now() >= deadline) {
        this.options.log.warn(
          { alerts: open.length },
          'quantity alerts: no reading counted the usage handed in time; read again at each reload until one does',
        );
        for (const id of open) this.unsettled.set(id, Math.max(this.unsettled.get(id) ?? 0, handed));
        return;
      }
      await sleep(RETRY_MS);
      alertReads.inc({ reason: 'settle' }, open.length);
      await evaluateAlerts(this.options.db, stores, { alertIds: open });
    }
  }

  private async voidsCommitted(voids: readonly UsageVoidRecord[]): Promise<boolean> {
    const { rows } = await this.options.db.query<{ pending: boolean }>(
      `SELECT EXISTS (
         SELECT 1 FROM unnest($1::bigint[], $2::uuid[]) AS k(org_id, id)
          WHERE NOT EXISTS (SELECT 1 FROM usage_events e
                             WHERE e.org_id = k.org_id AND e.id = k.id AND e.voided_at IS NOT NULL)) AS pending`,
      [voids.map((v) => v.event.orgId), voids.map((v) => v.event.id)],
    );
    return !rows[0]!.pending;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
