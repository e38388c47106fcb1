import type { Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import {
  type DailyUsagePoint,
  parseIntegerId,
  type SubscriptionUsage,
  type UpcomingInvoice,
} from '../../schemas/index.js';
import {
  PostgresDailyTotalsAggregator,
  type UsageAggregator,
  type UsageReadStores,
} from '../../usage/index.js';
import { planBurnDown, readActiveGrants, toBurnableGrant } from '../credits/index.js';
import { addMonthsAnchored, PERIOD_MONTHS } from '../domain/index.js';
import { composePeriodInvoice, type PeriodInvoice, UnbillableError } from '../invoices/index.js';
import { loadBillableItems } from '../item-set/index.js';
import type { BillableItem } from '../pricing/index.js';
import { billableUsage } from '../pricing/index.js';
import {
  billedPeriodsAt,
  type DueSubscription,
  type InvoiceInputs,
  type InvoiceTarget,
  loadInvoiceInputs,
  loadPeriodQuantities,
  loadSubscriptionSchedule,
  loadSubscriptionSchedules,
  POSTED_STATUSES,
  periodInvoiceInput,
  planBilling,
  type ScheduleStep,
  usageKey,
} from '../run/index.js';

/**
 * The usage read-back (docs/architecture.md, "The usage read-back"): a subscription's usage of a period, its daily series and its
 * upcoming invoice. Totals come through the aggregation port the billing run uses, and amounts
 * and invoices from composePeriodInvoice, the function the billing run composes its invoices
 * with: what is shown here is what the run will charge.
 */

const DAY_MS = 86_400_000;

/**
 * Postgres totals read through the caller's `db`: inside a transaction (an MCP tool's), a second
 * connection of the embedded database would wait for it to end.
 */
function aggregatorFor(db: Queryable, stores: UsageReadStores): UsageAggregator {
  return stores.aggregator instanceof PostgresDailyTotalsAggregator
    ? new PostgresDailyTotalsAggregator(db)
    : stores.aggregator;
}
export const MAX_DAILY_DAYS = 93;

/** The subscription as the billing run reads it; 404 when the organization has none of this id. */
async function loadSubscription(
  db: Queryable,
  orgId: number,
  subscriptionId: number | string,
): Promise<DueSubscription> {
  const id = parseIntegerId(subscriptionId);
  const subscription = id === undefined ? undefined : await loadSubscriptionSchedule(db, orgId, id);
  if (!subscription) throw ApiError.notFound(`Subscription ${subscriptionId}`);
  return subscription;
}

/**
 * What the billing run reads to compose `target`'s invoice (loadInvoiceInputs), read the same
 * way here, over the usage counted so far.
 */
function loadPeriodInputs(
  db: Queryable,
  stores: UsageReadStores,
  targets: InvoiceTarget[],
  options: { lateUsage: boolean },
) {
  return loadInvoiceInputs(
    db,
    { usage: aggregatorFor(db, stores), lockCustomers: false, lateUsage: options.lateUsage },
    targets,
  );
}

function metered(items: readonly BillableItem[]): BillableItem[] {
  return items.filter((item) => item.usage_type === 'metered');
}

/** The period `previous` names: the one that ended where the current one starts (never before the start). */
function periodOf(subscription: DueSubscription, period: 'current' | 'previous'): { start: Date; end: Date } {
  if (period === 'current')
    return { start: subscription.current_period_start, end: subscription.current_period_end };
  const end = subscription.current_period_start;
  const back = addMonthsAnchored(
    end,
    -PERIOD_MONTHS[subscription.billing_period],
    subscription.billing_anchor_day,
  );
  const start = new Date(
    Math.min(end.getTime(), Math.max(back.getTime(), subscription.start_date.getTime())),
  );
  return { start, end };
}

export async function getSubscriptionUsage(
  db: Queryable,
  stores: UsageReadStores,
  orgId: number,
  subscriptionId: number | string,
  options: { period?: 'current' | 'previous'; now?: Date } = {},
): Promise<SubscriptionUsage> {
  // as_of before the totals: every event it vouches for is in the store when they are read.
  const [subscription, asOf] = await Promise.all([
    loadSubscription(db, orgId, subscriptionId),
    stores.asOf(),
  ]);
  const { start, end } = periodOf(subscription, options.period ?? 'current');
  const target = usageTarget(subscription, start, end);
  // a period's usage: the late-usage lines of earlier periods are the upcoming invoice's, not its
  const inputs = await loadPeriodInputs(db, stores, [target], { lateUsage: false });
  const now = options.now ?? new Date();
  return composeUsage(target, inputs, asOf, now, await billedQuantities(db, target, inputs, now));
}

/**
 * The subscriptions of `keys` found, as targets over their current period, and `as_of`, read
 * before any total (as getSubscriptionUsage does: every event it vouches for is counted).
 */
async function currentPeriodTargets(
  db: Queryable,
  stores: UsageReadStores,
  keys: readonly { orgId: number; subscriptionId: number }[],
): Promise<{ asOf: Date; targets: InvoiceTarget[] }> {
  const [subscriptions, asOf] = await Promise.all([loadSubscriptionSchedules(db, keys), stores.asOf()]);
  const targets = subscriptions.map((subscription) => {
    const { start, end } = periodOf(subscription, 'current');
    return usageTarget(subscription, start, end);
  });
  return { asOf, targets };
}

/**
 * The current period's usage of several subscriptions, read as getSubscriptionUsage reads one but
 * with one query per kind of input for all of them (what the alerts evaluate after each batch of
 * the usage log). Subscriptions not found, or that cannot be invoiced now, are absent.
 */
export async function getSubscriptionsUsage(
  db: Queryable,
  stores: UsageReadStores,
  keys: readonly { orgId: number; subscriptionId: number }[],
  options: { now?: Date } = {},
): Promise<Map<number, SubscriptionUsage>> {
  const found = new Map<number, SubscriptionUsage>();
  if (keys.length === 0) return found;
  const { asOf, targets } = await currentPeriodTargets(db, stores, keys);
  const inputs = await loadPeriodInputs(db, stores, targets, { lateUsage: false });
  const now = options.now ?? new Date();
  for (const target of targets) {
    try {
      const billed = await billedQuantities(db, target, inputs, now);
      found.set(target.subscription.id, composeUsage(target, inputs, asOf, now, billed));
    } catch (error) {
      if (!(error instanceof UnbillableError)) throw error;
    }
  }
  return found;
}

/** A subscription's metered quantities in its current period, counted up to `asOf`. */
export interface PeriodQuantities {
  periodStart: Date;
  asOf: Date;
  /** subscription item id -> quantity (decimal text), for the metered items of the period. */
  quantities: Map<number, string>;
}

/**
 * The `quantity` of each metered item getSubscriptionsUsage would give, and nothing else: the
 * same items and totals (loadPeriodQuantities, the usage part of the run's inputs) without the
 * customers, proration lines and invoice an amount needs. What usage_quantity alerts read after
 * each batch of the usage log.
 */
export async function getSubscriptionsItemQuantities(
  db: Queryable,
  stores: UsageReadStores,
  keys: readonly { orgId: number; subscriptionId: number }[],
): Promise<Map<number, PeriodQuantities>> {
  const found = new Map<number, PeriodQuantities>();
  if (keys.length === 0) return found;
  const { asOf, targets } = await currentPeriodTargets(db, stores, keys);
  const { items, usage } = await loadPeriodQuantities(db, aggregatorFor(db, stores), targets);
  for (const target of targets) {
    const totals = usage.get(usageKey(target.subscription, target.step));
    const quantities = new Map<number, string>();
    for (const item of metered(items.get(target.subscription.id) ?? []))
      quantities.set(item.subscription_item_id, totals?.get(item.subscription_item_id) ?? '0.00000000');
    found.set(target.subscription.id, { periodStart: target.step.periodStart, asOf, quantities });
  }
  return found;
}

/** Each item over the time it was on the subscription (docs/architecture.md), as the billing run counts it. */
function usageTarget(subscription: DueSubscription, start: Date, end: Date): InvoiceTarget {
  return { subscription, step: { kind: 'invoice', periodStart: start, periodEnd: end, firstPeriod: false } };
}

/**
 * A posted period: what its invoice billed per metered item, the rest counted since being late
 * usage. A period still running has no invoice, so the running period's read (the hot one) asks
 * nothing more.
 */
async function billedQuantities(
  db: Queryable,
  target: InvoiceTarget,
  inputs: InvoiceInputs,
  now: Date,
): Promise<Map<number, string>> {
  const { subscription, step } = target;
  if (step.periodEnd.getTime() > now.getTime()) return new Map();
  const itemIds = metered(inputs.items.get(subscription.id) ?? []).map((item) => item.subscription_item_id);
  const periods = await billedPeriodsAt(db, subscription.org_id, itemIds, step.periodStart);
  return new Map(
    periods
      .filter((period) => POSTED_STATUSES.includes(period.invoice_status))
      .map((period) => [period.subscription_item_id, period.period_quantity]),
  );
}

function composeUsage(
  target: InvoiceTarget,
  inputs: InvoiceInputs,
  asOf: Date,
  now: Date,
  billed: Map<number, string>,
): SubscriptionUsage {
  const { subscription, step } = target;
  const period = periodInvoiceInput(target, inputs);
  const meteredItems = metered(period.items);
  const totals = period.usage;
  const invoice = meteredItems.length
    ? // metered items only: one-time items and the lines of changes do not enter usage amounts
      // amounts before tax: the destination's tax is no part of them, and a customer whose region
      // the tax table does not know (docs/decisions.md) still sees its usage priced
      composePeriodInvoice({
        ...period,
        items: meteredItems,
        prorationLines: [],
        customer: { ...period.customer, tax_exempt: true },
      })
    : undefined;
  const amounts = new Map(invoice?.lines.map((line) => [line.subscription_item_id, line.line_total_pre_tax]));
  return {
    object: 'subscription_usage',
    subscription_id: subscription.id,
    period_start: step.periodStart.toISOString(),
    period_end: step.periodEnd.toISOString(),
    as_of: asOf.toISOString(),
    lag_seconds: Math.max(0, Math.round(now.getTime() - asOf.getTime()) / 1000),
    currency: subscription.currency.trim(),
    items: meteredItems.map((item) => {
      const quantity = totals.get(item.subscription_item_id) ?? '0.00000000';
      return {
        subscription_item_id: item.subscription_item_id,
        product_id: item.product_id,
        product_name: item.product_name,
        unit_label: item.unit_label,
        quantity,
        included_units: formatMoney(parseMoney(item.included_units)),
        billable_quantity: formatMoney(parseMoney(billableUsage(quantity, item.included_units))),
        amount: amounts.get(item.subscription_item_id) ?? '0.00000000',
        late_quantity: lateQuantity(quantity, billed.get(item.subscription_item_id)),
      };
    }),
    total_amount: invoice?.subtotal ?? '0.00000000',
  };
}

function lateQuantity(quantity: string, billed: string | undefined): string {
  if (billed === undefined) return '0.00000000';
  const late = parseMoney(quantity) - parseMoney(billed);
  return formatMoney(late > 0n ? late : 0n);
}

export interface DailyUsageQuery {
  /** YYYY-MM-DD, inclusive; default: the current period's first day. */
  from?: string | undefined;
  /** YYYY-MM-DD, inclusive; default: the current period's last day. */
  to?: string | undefined;
  subscriptionItemId?: number | undefined;
}

export async function getDailyUsage(
  db: Queryable,
  stores: UsageReadStores,
  orgId: number,
  subscriptionId: number | string,
  query: DailyUsageQuery = {},
): Promise<DailyUsagePoint[]> {
  // side by side: both are scoped to the organization, and the items of a missing one are dropped
  const id = parseIntegerId(subscriptionId);
  const [subscription, items] = await Promise.all([
    loadSubscription(db, orgId, subscriptionId),
    id === undefined ? new Map<number, BillableItem[]>() : loadBillableItems(db, [orgId], [id]),
  ]);
  const period = periodOf(subscription, 'current');
  const lastDay = new Date(Math.max(period.start.getTime(), period.end.getTime() - 1));
  let from = query.from ? Date.parse(`${query.from}T00:00:00Z`) : dayStart(period.start);
  const to = query.to ? Date.parse(`${query.to}T00:00:00Z`) : dayStart(lastDay);
  if (!query.from && to - from >= MAX_DAILY_DAYS * DAY_MS) from = to - (MAX_DAILY_DAYS - 1) * DAY_MS;
  if (from > to) {
    throw ApiError.validation([{ field: 'to', message: 'Must not be before from.', code: 'out_of_range' }]);
  }
  if ((to - from) / DAY_MS + 1 > MAX_DAILY_DAYS) {
    throw ApiError.validation([
      { field: 'to', message: `At most ${MAX_DAILY_DAYS} days from from, inclusive.`, code: 'out_of_range' },
    ]);
  }
  let series = metered(items.get(subscription.id) ?? []);
  if (query.subscriptionItemId !== undefined) {
    series = series.filter((item) => item.subscription_item_id === query.subscriptionItemId);
    if (!series.length) {
      throw ApiError.notFound(
        `Metered subscription item ${query.subscriptionItemId} of subscription ${subscription.id}`,
      );
    }
  }
  if (!series.length) return [];
  const ids = series.map((item) => item.subscription_item_id);
  const rows = await aggregatorFor(db, stores).daily(orgId, ids, new Date(from), new Date(to + DAY_MS));
  const found = new Map(rows.map((row) => [`${row.date}|${row.subscription_item_id}`, row.quantity]));
  const points: DailyUsagePoint[] = [];
  for (let day = from; day <= to; day += DAY_MS) {
    const date = new Date(day).toISOString().slice(0, 10);
    for (const id of ids) {
      points.push({ date, subscription_item_id: id, quantity: found.get(`${date}|${id}`) ?? '0.00000000' });
    }
  }
  return points;
}

function dayStart(instant: Date): number {
  return Math.floor(instant.getTime() / DAY_MS) * DAY_MS;
}

type InvoiceStep = Extract<ScheduleStep, { kind: 'invoice' }>;

/**
 * The next period the billing run will invoice: planBilling at the moments the run would bill,
 * so a trial that ends first is passed the way the run passes it. undefined when none will be
 * (canceled, expired, paused, or a trial that ends the subscription).
 */
function nextInvoiceStep(subscription: DueSubscription): InvoiceStep | undefined {
  let schedule = { ...subscription };
  for (let i = 0; i < 3; i++) {
    const { steps, next } = planBilling(schedule, schedule.next_billing_date);
    const step = steps.find((s): s is InvoiceStep => s.kind === 'invoice');
    if (step) return step;
    if (next.next_billing_date.getTime() <= schedule.next_billing_date.getTime()) return undefined;
    schedule = {
      ...next,
      org_id: subscription.org_id,
      customer_id: subscription.customer_id,
      currency: subscription.currency,
    };
  }
  return undefined;
}

/**
 * The invoice the next billing run will create for the running period (docs/architecture.md, "The usage read-back"), composed by
 * the run's own composePeriodInvoice over the usage counted so far: once the period has ended and
 * no event changes, the run's invoice equals it to the last digit.
 */
export async function previewUpcomingInvoice(
  db: Queryable,
  stores: UsageReadStores,
  orgId: number,
  subscriptionId: number | string,
  /** `totals`: what the credit balance needs; credits_applied and amount_due then say nothing. */
  options: { only?: 'totals' } = {},
): Promise<UpcomingInvoice> {
  const subscription = await loadSubscription(db, orgId, subscriptionId);
  const step = nextInvoiceStep(subscription);
  if (!step) {
    throw new ApiError(
      'NOT_FOUND',
      `Subscription ${subscription.id} has no upcoming invoice (status ${subscription.status}).`,
    );
  }
  const asOf = await stores.asOf();
  // with the lines of changes made in the period (docs/architecture.md, "A subscription change's way"): the run puts them on this invoice
  const target: InvoiceTarget = { subscription, step };
  const inputs = await loadPeriodInputs(db, stores, [target], { lateUsage: true });
  const invoice: PeriodInvoice = composePeriodInvoice(periodInvoiceInput(target, inputs));
  return {
    object: 'upcoming_invoice',
    subscription_id: subscription.id,
    customer_id: subscription.customer_id,
    period_start: step.periodStart.toISOString(),
    period_end: step.periodEnd.toISOString(),
    invoice_date: invoice.invoice_date,
    as_of: asOf.toISOString(),
    currency: subscription.currency.trim(),
    lines: invoice.lines.map((line) => ({
      description: line.description,
      subscription_item_id: line.subscription_item_id,
      product_id: line.product_id,
      quantity: line.quantity,
      unit_price: line.unit_price,
      amount: line.line_total_pre_tax,
    })),
    subtotal: invoice.subtotal,
    tax_type: invoice.lines[0]?.tax_type ?? null,
    tax: invoice.tax_amount,
    total: invoice.total,
    ...(options.only === 'totals'
      ? { credits_applied: formatMoney(0n), amount_due: invoice.total }
      : await creditsOnUpcoming(db, subscription, inputs.items.get(subscription.id) ?? [], invoice)),
  };
}

/**
 * What the customer's grants would pay of the upcoming invoice if it were posted now: the
 * posting's own burn-down (planBurnDown) over the grants as they stand.
 */
async function creditsOnUpcoming(
  db: Queryable,
  subscription: DueSubscription,
  items: readonly BillableItem[],
  invoice: PeriodInvoice,
): Promise<{ credits_applied: string; amount_due: string }> {
  const grants = await readActiveGrants(db, subscription.org_id, subscription.customer_id);
  const meteredIds = new Set(metered(items).map((item) => item.subscription_item_id));
  const usage = invoice.lines
    .filter((line) => meteredIds.has(line.subscription_item_id))
    .reduce((sum, line) => sum + parseMoney(line.line_total_pre_tax) + parseMoney(line.tax_amount), 0n);
  const uses = planBurnDown(
    {
      currency: subscription.currency.trim(),
      balance: invoice.total,
      usage_amount: formatMoney(usage),
      prepaid_credits: false,
    },
    grants.map(toBurnableGrant),
    new Date(),
  );
  const applied = uses.reduce((sum, use) => sum + parseMoney(use.amount), 0n);
  return {
    credits_applied: formatMoney(applied),
    amount_due: formatMoney(parseMoney(invoice.total) - applied),
  };
}
