import type { Queryable } from '../../db/index.js';
import { parseScaled } from '../../money/index.js';
import type { UsageAggregator } from '../../usage/index.js';
import {
  atBilledTerms,
  type BilledPeriod,
  type BilledTerms,
  itemForPeriod,
  type LateUsageLine,
  lateUsageLine,
  type PendingProrationLine,
  type PeriodInvoiceInput,
  pendingProrationLines,
  usageWindow,
} from '../invoices/index.js';
import { endItemsAt, loadBillableItems, loadBillableItemsSince, loadItemsById } from '../item-set/index.js';
import type { BillableItem, ProrationLine } from '../pricing/index.js';
import { countBilledPeriods, dirtyPostedPeriods } from './billed-periods.js';
import { type BillingCustomer, type DueSubscription, loadCustomers } from './billing-store.js';
import type { ScheduleStep } from './schedule.js';

export type InvoiceStep = Extract<ScheduleStep, { kind: 'invoice' }>;

export interface InvoiceTarget {
  subscription: DueSubscription;
  step: InvoiceStep;
  /** The subscription stops within the step's period (an immediate cancel): billed until then. */
  end?: SubscriptionEnd;
  /**
   * An ended subscription's invoice of late usage alone, dated `at` (the run's instant): no item is
   * billed for the step's period, only the late-usage lines of its posted periods.
   */
  lateUsageOnly?: { at: Date };
  /** A period billed again (its draft withdrawn): the terms that draft billed its items at. */
  terms?: BilledTerms | null;
}

/** Where a subscription canceled now stops being billed, and how its licensed items are credited. */
export interface SubscriptionEnd {
  at: Date;
  proration: 'prorate' | 'none';
}

/**
 * What composing a batch's invoices reads, in a few queries for the whole batch: the billing run
 * and the usage read-back (the upcoming invoice, a period's usage) load it alike.
 */
export interface InvoiceInputs {
  items: Map<number, BillableItem[]>;
  customers: Map<number, BillingCustomer>;
  usage: Map<string, Map<number, string>>;
  /** usageKey -> the proration lines that invoice carries. */
  prorationLines: Map<string, PendingProrationLine[]>;
  /** usageKey -> the credits of items ended before the period's end (written only as lines). */
  endLines: Map<string, ProrationLine[]>;
  /** usageKey -> the late-usage lines of earlier, posted periods that invoice carries. */
  lateLines: Map<string, LateUsageLine[]>;
  /** Every billed period compared with what is counted now (those lines bill, the rest agreed). */
  compared: BilledPeriod[];
}

/**
 * What composing the invoices of `toInvoice` (periodInvoiceInput) reads: their items (ended at `end` for a
 * subscription that stops within its period), customers (locked when posting will consume their
 * credit), usage and waiting proration lines.
 */
export async function loadInvoiceInputs(
  tx: Queryable,
  options: {
    usage: UsageAggregator;
    lockCustomers: boolean;
    /** The run: billed periods compared are locked until it commits what it bills of them. */
    lockBilled?: boolean;
    /** Whether the late usage of earlier, posted periods is loaded (default: yes). */
    lateUsage?: boolean;
  },
  toInvoice: InvoiceTarget[],
): Promise<InvoiceInputs> {
  const orgIds = unique(toInvoice.map(({ subscription }) => subscription.org_id));
  const subscriptionIds = unique(toInvoice.map(({ subscription }) => subscription.id));
  const items = await itemsFor(
    tx,
    orgIds,
    toInvoice.filter((target) => !target.lateUsageOnly),
  );
  for (const target of toInvoice) if (target.lateUsageOnly) items.set(target.subscription.id, []);
  const endLines = new Map<string, ProrationLine[]>();
  for (const { subscription, step, end } of toInvoice) {
    if (!end) continue;
    const ended = endItemsAt(
      { ...subscription, current_period_start: step.periodStart, current_period_end: step.periodEnd },
      items.get(subscription.id) ?? [],
      { at: end.at, mode: end.proration },
    );
    items.set(subscription.id, ended.items);
    endLines.set(usageKey(subscription, step), ended.lines);
  }
  const lastEnd = toInvoice.reduce(
    (latest, { step }) => (step.periodEnd > latest ? step.periodEnd : latest),
    new Date(0),
  );
  // side by side (in a transaction, one after the other in this order: the customers' locks first)
  const [customers, usage, pending] = await Promise.all([
    loadCustomers(tx, orgIds, unique(toInvoice.map(({ subscription }) => subscription.customer_id)), {
      lock: options.lockCustomers,
    }),
    periodUsage(options.usage, toInvoice, items),
    pendingProrationLines(tx, orgIds, subscriptionIds, lastEnd),
  ]);
  // each line goes on the first invoice (in period order) whose period ends at or after its own
  const prorationLines = new Map<string, PendingProrationLine[]>();
  for (const { subscription, step } of toInvoice) {
    const waiting = pending.get(subscription.id) ?? [];
    const due = waiting.filter((line) => new Date(line.period_end) <= step.periodEnd);
    if (due.length === 0) continue;
    prorationLines.set(usageKey(subscription, step), due);
    pending.set(
      subscription.id,
      waiting.filter((line) => !due.includes(line)),
    );
  }
  const { lateLines, compared } =
    options.lateUsage === false
      ? { lateLines: new Map<string, LateUsageLine[]>(), compared: [] }
      : await loadLateUsage(tx, toInvoice, options.lockBilled ?? false);
  return { items, customers, usage, prorationLines, endLines, lateLines, compared };
}

/**
 * The usage part of loadInvoiceInputs alone: each target's items and their period totals, read the
 * same way, for a reader that needs quantities and no amounts (the usage_quantity alerts).
 */
export async function loadPeriodQuantities(
  tx: Queryable,
  usage: UsageAggregator,
  targets: InvoiceTarget[],
): Promise<Pick<InvoiceInputs, 'items' | 'usage'>> {
  const orgIds = unique(targets.map(({ subscription }) => subscription.org_id));
  const items = await itemsFor(tx, orgIds, targets);
  return { items, usage: await periodUsage(usage, targets, items) };
}

/**
 * The items of the targets' subscriptions: those billed for the running period or later, and, for
 * a period before it (one whose draft was withdrawn, the read-back of the previous period), those
 * removed within that period too.
 */
async function itemsFor(
  tx: Queryable,
  orgIds: number[],
  toInvoice: InvoiceTarget[],
): Promise<Map<number, BillableItem[]>> {
  const earliest = new Map<number, Date>();
  for (const { subscription, step } of toInvoice) {
    if (step.periodStart >= subscription.current_period_start) continue;
    const seen = earliest.get(subscription.id);
    if (!seen || step.periodStart < seen) earliest.set(subscription.id, step.periodStart);
  }
  const running = unique(
    toInvoice.map(({ subscription }) => subscription.id).filter((id) => !earliest.has(id)),
  );
  const items = running.length
    ? await loadBillableItems(tx, orgIds, running)
    : new Map<number, BillableItem[]>();
  const byStart = new Map<number, number[]>();
  for (const [id, start] of earliest)
    byStart.set(start.getTime(), [...(byStart.get(start.getTime()) ?? []), id]);
  for (const [start, ids] of byStart) {
    for (const [id, list] of await loadBillableItemsSince(tx, orgIds, ids, new Date(start)))
      items.set(id, list);
  }
  return items;
}

/**
 * Late usage (docs/decisions.md "Late usage"): each subscription's posted periods whose counted
 * usage may differ from what they billed, compared now; what grew is billed on the subscription's
 * first invoice of `toInvoice`, as a line per item and period priced at the period's terms.
 */
async function loadLateUsage(
  tx: Queryable,
  toInvoice: InvoiceTarget[],
  lock: boolean,
): Promise<{ lateLines: Map<string, LateUsageLine[]>; compared: BilledPeriod[] }> {
  const lateLines = new Map<string, LateUsageLine[]>();
  const firstTarget = new Map<number, InvoiceTarget>();
  for (const target of toInvoice) {
    const seen = firstTarget.get(target.subscription.id);
    if (!seen || target.step.periodStart < seen.step.periodStart)
      firstTarget.set(target.subscription.id, target);
  }
  const orgIds = unique(toInvoice.map(({ subscription }) => subscription.org_id));
  const compared = await dirtyPostedPeriods(tx, orgIds, [...firstTarget.keys()], { lock });
  if (compared.length === 0) return { lateLines, compared };
  const counted = await countBilledPeriods(tx, compared);
  // most compared periods agree with what they billed: only those that grew need their item
  const grew = compared.filter(
    (period) =>
      parseScaled(counted.get(period)!, 8) >
      parseScaled(period.period_quantity, 8) + parseScaled(period.late_quantity, 8),
  );
  const items = await loadItemsById(tx, orgIds, unique(grew.map((period) => period.subscription_item_id)));
  for (const period of grew) {
    const target = firstTarget.get(period.subscription_id)!;
    const item = items.get(period.subscription_item_id);
    if (!item) continue;
    const line = lateUsageLine(item, period, counted.get(period)!, target.subscription.currency.trim());
    if (!line) continue;
    const key = usageKey(target.subscription, target.step);
    lateLines.set(key, [...(lateLines.get(key) ?? []), line]);
  }
  return { lateLines, compared };
}

/**
 * What composePeriodInvoice is given for `target`: the one composition of the billing run and of
 * the read-back's upcoming invoice.
 */
export function periodInvoiceInput(target: InvoiceTarget, inputs: InvoiceInputs): PeriodInvoiceInput {
  const { subscription, step, end } = target;
  const customer = inputs.customers.get(subscription.customer_id);
  if (!customer || customer.org_id !== subscription.org_id) {
    throw new Error(`customer ${subscription.customer_id} of subscription ${subscription.id} not found`);
  }
  const key = usageKey(subscription, step);
  return {
    items: targetItems(target, inputs),
    currency: subscription.currency,
    usage: inputs.usage.get(key) ?? new Map(),
    firstPeriod: step.firstPeriod,
    periodStart: step.periodStart,
    periodEnd: step.periodEnd,
    prorationLines: [
      ...(inputs.prorationLines.get(key) ?? []),
      ...(inputs.endLines.get(key) ?? []),
      ...(inputs.lateLines.get(key) ?? []),
    ],
    customer,
    endsAt: end?.at ?? target.lateUsageOnly?.at,
  };
}

/** The items `target`'s invoice bills: at the terms its period was billed at before, if it was. */
export function targetItems(target: InvoiceTarget, inputs: Pick<InvoiceInputs, 'items'>): BillableItem[] {
  return atBilledTerms(inputs.items.get(target.subscription.id) ?? [], target.terms);
}

export const usageKey = (subscription: DueSubscription, step: InvoiceStep) =>
  `${subscription.id}|${step.periodStart.toISOString()}`;

/**
 * Usage of every metered item over the part of its invoice's period it was on the subscription
 * (all of it, unless a change added or removed it within), one aggregation call per
 * (organization, window): in a batch of subscriptions renewing together that is one call for all.
 */
export async function periodUsage(
  aggregator: UsageAggregator,
  toInvoice: InvoiceTarget[],
  items: Map<number, BillableItem[]>,
): Promise<Map<string, Map<number, string>>> {
  const groups = new Map<
    string,
    { orgId: number; from: Date; to: Date; itemIds: number[]; itemsByKey: Map<string, number[]> }
  >();
  for (const { subscription, step } of toInvoice) {
    const period = { start: step.periodStart, end: step.periodEnd };
    const key = usageKey(subscription, step);
    for (const item of items.get(subscription.id) ?? []) {
      if (item.usage_type !== 'metered' || !itemForPeriod(item, period)) continue;
      const window = usageWindow(item, period);
      const groupKey = `${subscription.org_id}|${window.start.toISOString()}|${window.end.toISOString()}`;
      let group = groups.get(groupKey);
      if (!group) {
        group = {
          orgId: subscription.org_id,
          from: window.start,
          to: window.end,
          itemIds: [],
          itemsByKey: new Map(),
        };
        groups.set(groupKey, group);
      }
      group.itemIds.push(item.subscription_item_id);
      // each target's own items: a group of many subscriptions is merged in one pass, not one per pair
      const ofKey = group.itemsByKey.get(key);
      if (ofKey) ofKey.push(item.subscription_item_id);
      else group.itemsByKey.set(key, [item.subscription_item_id]);
    }
  }
  const usage = new Map<string, Map<number, string>>();
  for (const group of groups.values()) {
    const totals = await aggregator.totals(group.orgId, group.itemIds, group.from, group.to);
    for (const [key, itemIds] of group.itemsByKey) {
      let merged = usage.get(key);
      if (!merged) {
        merged = new Map<number, string>();
        usage.set(key, merged);
      }
      for (const id of itemIds) {
        const total = totals.get(id);
        if (total !== undefined) merged.set(id, total);
      }
    }
  }
  return usage;
}

export function unique(values: number[]): number[] {
  return [...new Set(values)];
}
