import type { Database } from '../db/index.js';
import type { Logger } from '../log/index.js';
import type { UsageReadStores } from '../usage/index.js';
import { type AlertState, alertStatesOf, evaluateAlerts } from './alerts.js';
import type { GuardrailPolicy, TouchedSubscription } from './evaluator.js';
import { RecentUsage } from './recent-usage.js';

export interface AlertPolicyOptions {
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
  now?: () => number;
}

/** KAFKA_ACK_TIMEOUT_MS and KAFKA_LINGER_MS by default, and 200 ms more, as the usage counter settles. */
const DEFAULT_SETTLE_MS = 3000 + 5 + 200;
const DEFAULT_REFRESH_MS = 2000;

/**
 * Usage counted moves usage and credit metrics: the alerts of the touched subscriptions are
 * evaluated. A `usage_quantity` alert is read (through the read-back, exact) only when it may
 * have moved (docs/decisions.md, "Quantity alerts are read only near their threshold"): its last
 * reading plus every quantity this process has read on the log for its item since that reading's
 * `as_of` (less settleMs) is a bound from above of its quantity now; an OK alert whose bound is
 * below its threshold cannot have crossed, and a TRIGGERED one only goes back on a void. A reading
 * the bound cannot rest on (none, older than refreshMs, or older than this process's log reading)
 * is read. Amount and credit alerts are read on every batch, as before.
 */
export function alertPolicy(db: Database, options: AlertPolicyOptions = {}): GuardrailPolicy {
  const settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
  const refreshMs = options.refreshMs ?? DEFAULT_REFRESH_MS;
  const now = options.now ?? Date.now;
  const recent = new RecentUsage();
  // events recorded before this (less settleMs) may have been read by a process before this one
  const startedAtMs = now();
  /**
   * Subscriptions whose quantity alerts were skipped, and when: read once more after refreshMs if
   * no batch read them meanwhile, in case the bound missed events another evaluator process read
   * (a partition that moved between two live processes).
   */
  const skipped = new Map<string, { subscription: TouchedSubscription; atMs: number }>();
  let sweeper: NodeJS.Timeout | undefined;
  let lastStores: UsageReadStores | undefined;

  const mustRead = (alert: AlertState, subscription: TouchedSubscription, atMs: number): boolean => {
    if (alert.metric !== 'usage_quantity' || alert.subscriptionItemId === null) return true;
    if (subscription.voided) return true;
    if (alert.value === null || alert.evaluatedAsOfMs === null) return true;
    if (alert.evaluatedAsOfMs < atMs - refreshMs) return true;
    const from = alert.evaluatedAsOfMs - settleMs;
    if (from < startedAtMs) return true;
    // TRIGGERED in its period: only a void (read above) or a new period (refreshMs) moves it back
    if (alert.status === 'TRIGGERED') return false;
    // +1: the reading's text rounded to 1e-8
    const bound = alert.value + recent.since(alert.orgId, alert.subscriptionItemId, from) + 1n;
    return bound >= alert.threshold;
  };

  const sweep = async () => {
    const due = [...skipped.values()].filter((entry) => entry.atMs <= now() - refreshMs);
    if (!due.length || !lastStores) return;
    for (const entry of due) skipped.delete(keyOf(entry.subscription));
    await evaluateAlerts(db, lastStores, {
      subscriptions: due.map(({ subscription }) => ({
        orgId: subscription.orgId,
        subscriptionId: subscription.subscriptionId,
      })),
    });
  };

  return {
    name: 'alerts',
    observe(events) {
      recent.add(events);
    },
    async evaluate(touched, stores) {
      lastStores = stores;
      const atMs = now();
      const bySubscription = new Map(touched.map((t) => [keyOf(t), t]));
      const alerts = await alertStatesOf(
        db,
        touched.map((t) => ({ orgId: t.orgId, subscriptionId: t.subscriptionId })),
      );
      const read: string[] = [];
      const readSubscriptions = new Set<string>();
      for (const alert of alerts) {
        const key = `${alert.orgId}:${alert.subscriptionId}`;
        // a credit alert of a touched customer's other subscription: read, as before
        const subscription = bySubscription.get(key);
        if (!subscription || mustRead(alert, subscription, atMs)) {
          read.push(alert.id);
          readSubscriptions.add(key);
        } else if (!skipped.has(key)) {
          skipped.set(key, { subscription, atMs });
        }
      }
      for (const key of readSubscriptions) skipped.delete(key);
      // no bound ever starts before now - refreshMs - settleMs
      recent.prune(atMs - refreshMs - settleMs - 1000);
      if (!sweeper && skipped.size) {
        sweeper = setInterval(() => {
          sweep().catch((error) => options.log?.error({ err: error }, 'alerts sweep failed'));
        }, refreshMs / 2);
        sweeper.unref();
      }
      if (read.length) await evaluateAlerts(db, stores, { alertIds: read });
    },
  };
}

function keyOf(subscription: { orgId: number; subscriptionId: number }): string {
  return `${subscription.orgId}:${subscription.subscriptionId}`;
}
