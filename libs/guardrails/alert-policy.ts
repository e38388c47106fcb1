import type { Database } from '../db/index.js';
import type { Logger } from '../log/index.js';
import type { UsageReadStores } from '../usage/index.js';
import { type AlertState, alertStatesOf, evaluateAlerts } from './alerts.js';
import type { GuardrailPolicy, TouchedSubscription } from './evaluator.js';
import { RecentUsage } from './recent-usage.js';

export interface AlertPolicyOptions {
  /**
   * The alerts this policy evaluates: every metric (default, embedded), or all but
   * `usage_quantity` (the sinks' `guardrails` group: the `alerts` group has those,
   * quantity-alerts.ts).
   */
  metrics?: 'all' | 'others';
  /**
   * The longest an event may take from its `recordedAt` to its 201 (the log's acknowledgement
   * timeout and linger, and a margin): an event a reading with `as_of` A does not count was
   * recorded after A - settleMs.
   */
  settleMs?: number;
  /**
   * A reading older than this is read again when its subscription's usage moves (at the latest
   * 1.5 refreshMs after it moved): how stale an alert's `value` may be.
   */
  refreshMs?: number;
  log?: Logger;
}

/** KAFKA_ACK_TIMEOUT_MS and KAFKA_LINGER_MS by default, and 200 ms more, as the usage counter settles. */
const DEFAULT_SETTLE_MS = 3000 + 5 + 200;
const DEFAULT_REFRESH_MS = 2000;
/** How long the quantities read on the log are kept (a bound reaching further back reads instead). */
const KEEP_MS = 60_000;
/** A suspected crossing is read again this often until a reading counts what was handed... */
const RETRY_MS = 100;
/** ...for at most this long (then the next usage of the item, or the sweep, reads it again). */
const FINAL_WAIT_MS = 10_000;

/**
 * Usage counted moves usage and credit metrics: the alerts of the touched subscriptions are
 * evaluated. A `usage_quantity` alert is read (through the read-back, exact) only when it may have
 * crossed (docs/decisions.md, "Quantity alerts are read only near their threshold, in a group that
 * does not wait"; the sinks run the same bound in quantity-alerts.ts): its last reading plus every
 * quantity this process read on the log for its item since that reading's `as_of` (less settleMs)
 * bounds its quantity now from above. An OK alert whose bound is below its
 * threshold cannot have crossed: it is read only to refresh its `value` (refreshMs). One whose
 * bound reaches it, whose item was voided, or whose bound cannot be drawn (no reading, a reading
 * older than this process or than what it keeps) is a suspect: read until it fires or a reading
 * counts every event handed so far (its `as_of` passed the moment they were handed), so the batch
 * is not done, and its offsets not committed, before its crossings are found. Amount and credit
 * alerts are read on every batch.
 */
export function alertPolicy(db: Database, options: AlertPolicyOptions = {}): GuardrailPolicy {
  const metrics = options.metrics ?? 'all';
  const settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
  const refreshMs = options.refreshMs ?? DEFAULT_REFRESH_MS;
  const recent = new RecentUsage();
  // events recorded before this (less settleMs) may have been read by a process before this one
  const startedAtMs = Date.now();
  let handedAtMs = 0;
  /**
   * Subscriptions whose quantity alerts were skipped, and when: read once more after refreshMs if
   * no batch read them meanwhile, in case the bound missed events another evaluator process read
   * (a partition that moved between two live processes).
   */
  const skipped = new Map<string, { subscription: TouchedSubscription; atMs: number }>();
  let sweeper: NodeJS.Timeout | undefined;
  let lastStores: UsageReadStores | undefined;

  const watched = (alert: AlertState) => metrics === 'all' || alert.metric !== 'usage_quantity';

  /** 'suspect': read until final; 'refresh': read once; 'skip'. */
  const decide = (
    alert: AlertState,
    subscription: TouchedSubscription | undefined,
    atMs: number,
  ): 'suspect' | 'refresh' | 'skip' => {
    if (alert.metric !== 'usage_quantity' || alert.subscriptionItemId === null) return 'refresh';
    if (!subscription || subscription.voided) return 'suspect';
    if (alert.value === null || alert.evaluatedAsOfMs === null) return 'suspect';
    const from = alert.evaluatedAsOfMs - settleMs;
    const since = from < startedAtMs ? undefined : recent.since(alert.orgId, alert.subscriptionItemId, from);
    if (since === undefined) return 'suspect';
    const stale = alert.evaluatedAsOfMs < atMs - refreshMs;
    // TRIGGERED in its period: only a void (above) or a new period (a refresh) moves it back
    if (alert.status === 'TRIGGERED') return stale ? 'refresh' : 'skip';
    // +1: the reading's text rounded to 1e-8
    if (alert.value + since + 1n >= alert.threshold) return 'suspect';
    return stale ? 'refresh' : 'skip';
  };

  const sweep = async () => {
    const due = [...skipped.values()].filter((entry) => entry.atMs <= Date.now() - refreshMs);
    if (!due.length || !lastStores) return;
    for (const entry of due) skipped.delete(keyOf(entry.subscription));
    const alerts = (
      await alertStatesOf(
        db,
        due.map(({ subscription }) => subscription),
      )
    ).filter(watched);
    if (alerts.length) await evaluateAlerts(db, lastStores, { alertIds: alerts.map((a) => a.id) });
  };

  /**
   * Reads the suspects again until each fired or was read by a reading that counts everything
   * handed before `handed` (as_of at or after it), at most FINAL_WAIT_MS.
   */
  const settle = async (suspects: readonly string[], handed: number, stores: UsageReadStores) => {
    const deadline = Date.now() + FINAL_WAIT_MS;
    let open = [...suspects];
    for (;;) {
      const states = await alertStatesOf(db, [], open);
      open = states
        .filter((s) => s.status !== 'TRIGGERED' && (s.evaluatedAsOfMs ?? 0) < handed)
        .map((s) => s.id);
      if (!open.length) return;
      if (Date.now() >= deadline) {
        options.log?.warn(
          { alerts: open.length },
          'alerts: no reading counted the usage handed in time; the next usage or the sweep reads them',
        );
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      await evaluateAlerts(db, stores, { alertIds: open });
    }
  };

  return {
    name: 'alerts',
    // the subscriptions with an alert of these metrics, and every subscription of a customer with
    // a credit alert (alertStatesOf reads those with any subscription of the customer)
    watches: `SELECT org_id, subscription_id FROM alerts
               WHERE ${metrics === 'others' ? "metric <> 'usage_quantity'" : 'true'}
              UNION
              SELECT s.org_id, s.id FROM alerts a
                JOIN subscriptions s ON s.org_id = a.org_id AND s.customer_id = a.customer_id
               WHERE a.metric = 'credit_balance'`,
    observe(events) {
      if (metrics === 'others') return;
      recent.add(events);
      handedAtMs = Date.now();
    },
    async evaluate(touched, stores) {
      lastStores = stores;
      const atMs = Date.now();
      // every event of this batch was handed by now
      const handed = Math.max(handedAtMs, 1);
      const bySubscription = new Map(touched.map((t) => [keyOf(t), t]));
      const alerts = (
        await alertStatesOf(
          db,
          touched.map((t) => ({ orgId: t.orgId, subscriptionId: t.subscriptionId })),
          [],
          metrics === 'others' ? 'usage_quantity' : null,
        )
      ).filter(watched);
      const read: string[] = [];
      const suspects: string[] = [];
      const readSubscriptions = new Set<string>();
      for (const alert of alerts) {
        const key = `${alert.orgId}:${alert.subscriptionId}`;
        // undefined: a credit alert of a touched customer's other subscription
        const subscription = bySubscription.get(key);
        const decision = decide(alert, subscription, atMs);
        if (decision === 'skip') {
          if (subscription && !skipped.has(key)) skipped.set(key, { subscription, atMs });
          continue;
        }
        read.push(alert.id);
        readSubscriptions.add(key);
        if (decision === 'suspect' && alert.metric === 'usage_quantity') suspects.push(alert.id);
      }
      for (const key of readSubscriptions) skipped.delete(key);
      recent.prune(atMs - KEEP_MS);
      if (!sweeper && skipped.size) {
        sweeper = setInterval(() => {
          sweep().catch((error) => options.log?.error({ err: error }, 'alerts sweep failed'));
        }, refreshMs / 2);
        sweeper.unref();
      }
      if (!read.length) return;
      await evaluateAlerts(db, stores, { alertIds: read });
      if (suspects.length) await settle(suspects, handed, stores);
    },
  };
}

function keyOf(subscription: { orgId: number; subscriptionId: number }): string {
  return `${subscription.orgId}:${subscription.subscriptionId}`;
}
