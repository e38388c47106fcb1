import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../../db/index.js';
import { ApiError, type ErrorCode } from '../../errors/index.js';
import { type DomainEvent, emitDomainEvents } from '../../events/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import { billingRunDuration, billingRunInvoices, secondsSince } from '../../observability/index.js';
import { PostgresUsageAggregator, type UsageAggregator } from '../../usage/index.js';
import { applyDunning, statusForAmountPaid } from '../collection/index.js';
import {
  creditsApplied,
  expireCreditGrants,
  type PostingInvoice,
  planCreditsOnPosting,
  recordCreditsOnPosting,
} from '../credits/index.js';
import {
  addDays,
  invoiceEventData,
  invoicePeriodDates,
  subscriptionEventData,
  subscriptionUpdatedEventData,
  utcDate,
} from '../domain/index.js';
import {
  billedTermsOf,
  composePeriodInvoice,
  formatInvoiceNumber,
  insertInvoices,
  itemForPeriod,
  type NewInvoice,
  pendingProrationLines,
  reserveInvoiceNumbers,
  UnbillableError,
  usageWindow,
} from '../invoices/index.js';
import { applyItemSet, changesNothing, loadBillableItems, type ResolvedEntry } from '../item-set/index.js';
import {
  insertBilledPeriods,
  type NewBilledPeriod,
  POSTED_STATUSES,
  recordLateBillings,
} from './billed-periods.js';
import {
  claimDueSubscriptions,
  claimEndedWithLateUsage,
  type DueChange,
  type DueSubscription,
  markProrationLinesInvoiced,
  type ParkedSubscription,
  parkedSubscriptions,
  parkSubscription,
  takeDueChanges,
  takeRebillPeriods,
  updateSubscriptions,
} from './billing-store.js';
import { postDueGraceDrafts, rerateDirtyDrafts } from './drafts.js';
import {
  type InvoiceInputs,
  type InvoiceStep,
  type InvoiceTarget,
  loadInvoiceInputs,
  periodInvoiceInput,
  type SubscriptionEnd,
  targetItems,
  unique,
  usageKey,
} from './invoice-inputs.js';
import { BILLABLE_STATUSES, planBilling, type ScheduleStep, type SubscriptionSchedule } from './schedule.js';

/**
 * The billing run (docs/architecture.md, "A billing run's way"): every subscription whose next_billing_date has passed is
 * moved forward to `now`: pending ones start, trials end (never charged), each ended period gets
 * one invoice (posted unless asked for drafts, the customer's credit consumed as a CREDIT_MEMO),
 * subscriptions canceled at period end or at the end of a term stop, termed ones renew.
 *
 * Work goes in batches, each one transaction that claims its subscriptions with FOR NO KEY UPDATE
 * SKIP LOCKED: two runs at once split the work, and the unique key (subscription_id, period_start)
 * is the last line of defence. Events go to the outbox in the batch's transaction.
 */

/**
 * Where a batch reads usage totals. The Postgres implementation of the aggregation port must read
 * through the batch's own transaction: the embedded database serializes connections, so a second
 * connection would wait for the batch to commit, forever.
 */
export type UsageForTransaction = (tx: Queryable) => UsageAggregator;

export function usageSource(aggregator: UsageAggregator): UsageForTransaction {
  return aggregator instanceof PostgresUsageAggregator
    ? (tx) => new PostgresUsageAggregator(tx)
    : () => aggregator;
}

export interface BillingRunOptions {
  usage: UsageForTransaction;
  /** Bill what is due as of this instant (default: now). */
  now?: Date;
  /** Only this organization's subscriptions. */
  orgId?: number;
  /** Only these subscriptions (the seed uses it to leave some invoices in DRAFT). */
  subscriptionIds?: readonly number[];
  /** Post the invoices (default true); false leaves them DRAFT for `invoice post`. */
  post?: boolean;
  /**
   * The instant posting judges credit grants at (effective, not expired): default the wall clock
   * when each batch posts, whatever `now` bills as of.
   */
  postingTime?: Date;
  /**
   * Called once the run is done with the customers whose invoices it posted (each once): what
   * their credit balance projects moved, so their automatic top-ups are checked.
   */
  afterPosting?: (customers: { orgId: number; customerId: number }[]) => Promise<void>;
  batchSize?: number;
  progress?: (message: string) => void;
}

export interface BillingRunSummary {
  now: string;
  org_id: number | null;
  posted: boolean;
  subscriptions_processed: number;
  invoices_created: number;
  invoice_ids: string[];
  subscriptions_started: number;
  trials_ended: number;
  renewed: number;
  canceled: number;
  expired: number;
  marked_past_due: number;
  back_to_active: number;
  /**
   * Subscriptions that could not be billed this time (the rest of the run went on without them):
   * the next run tries again.
   */
  failures: { subscription_id: number; error: string }[];
  /**
   * Subscriptions set aside until an operator acts (`subscription unpark` once the cause is fixed,
   * or `subscription cancel --without-invoicing`): a period that can never be invoiced, found by
   * this run or an earlier one. Listed on every run; they do not fail it.
   */
  parked: ParkedSubscription[];
  /** Drafts re-rated because events of their periods arrived late or were voided. */
  drafts_rerated: number;
  /** Grace drafts whose grace had passed, posted by this run. */
  grace_posted: string[];
  duration_ms: number;
}

export const DEFAULT_BATCH_SIZE = 200;

/**
 * `db` is a Database (each batch its own transaction) or a client already inside a transaction
 * (the seed), in which case the whole run joins that transaction.
 */
export async function runBilling(
  db: Database | Queryable,
  options: BillingRunOptions,
): Promise<BillingRunSummary> {
  const started = process.hrtime.bigint();
  const now = options.now ?? new Date();
  const post = options.post ?? true;
  const summary: BillingRunSummary = {
    now: now.toISOString(),
    org_id: options.orgId ?? null,
    posted: post,
    subscriptions_processed: 0,
    invoices_created: 0,
    invoice_ids: [],
    subscriptions_started: 0,
    trials_ended: 0,
    renewed: 0,
    canceled: 0,
    expired: 0,
    marked_past_due: 0,
    back_to_active: 0,
    failures: [],
    parked: [],
    drafts_rerated: 0,
    grace_posted: [],
    duration_ms: 0,
  };
  const batch: BatchContext = {
    now,
    post,
    orgId: options.orgId,
    subscriptionIds: options.subscriptionIds,
    exclude: [],
    usage: options.usage,
    postingTime: () => options.postingTime ?? new Date(),
  };
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  let reportedAt = Date.now();
  const report = () =>
    options.progress?.(
      `billing run: ${summary.subscriptions_processed} subscriptions processed, ${summary.invoices_created} invoices created`,
    );

  const postedFor = new Map<string, { orgId: number; customerId: number }>();
  if (isDatabase(db)) {
    // grants whose expiry has come lapse before the run (posting expires them too, per customer)
    for (const customer of await expireCreditGrants(db, options.postingTime ?? new Date())) {
      postedFor.set(`${customer.orgId}|${customer.customerId}`, customer);
    }
  }
  // drafts first: late events and voids re-rate them, and a grace that has passed posts them, so a
  // period is POSTED before the next period's invoice compares its late usage
  const draftFilter = { orgId: options.orgId, subscriptionIds: options.subscriptionIds };
  summary.drafts_rerated = (await rerateDirtyDrafts(db, draftFilter)).length;
  if (post) {
    const grace = await postDueGraceDrafts(db, { ...draftFilter, now, postingTime: options.postingTime });
    summary.grace_posted = grace.invoiceIds;
    for (const customer of grace.customers)
      postedFor.set(`${customer.orgId}|${customer.customerId}`, customer);
  }
  await billInBatches(
    db,
    (tx, only, onClaimed) =>
      only === undefined
        ? billBatch(tx, batch, batchSize, onClaimed)
        : billBatch(tx, { ...batch, subscriptionIds: [only] }, 1, onClaimed),
    {
      committed(result) {
        addToSummary(summary, result);
        addPostedFor(postedFor, result);
        if (Date.now() - reportedAt >= 1000) {
          reportedAt = Date.now();
          report();
        }
      },
      async failed(id, error, database) {
        batch.exclude.push(id);
        const permanent = retryCannotFix(error);
        if (permanent !== undefined) {
          // Retrying cannot help: set it aside for good, so later runs bill everyone else.
          await database.transaction((tx) => parkSubscription(tx, id, permanent));
          options.progress?.(`billing run: subscription ${id} parked: ${permanent}`);
        } else {
          const reason = (error as Error).message;
          summary.failures.push({ subscription_id: id, error: reason });
          options.progress?.(`billing run: subscription ${id} could not be billed: ${reason}`);
        }
      },
    },
  );

  if (post) {
    const ended = await billEndedLateUsage(db, batch, batchSize);
    addToSummary(summary, ended);
    addPostedFor(postedFor, ended);
    for (const failure of ended.failures) {
      summary.failures.push(failure);
      options.progress?.(
        `billing run: late usage of ended subscription ${failure.subscription_id} could not be billed: ${failure.error}`,
      );
    }
  }

  const dunning = await inTransaction(db, (tx) =>
    applyDunning(tx, utcDate(now), { orgId: options.orgId, subscriptionIds: options.subscriptionIds }),
  );
  summary.marked_past_due = dunning.pastDue.length;
  summary.back_to_active = dunning.restored.length;
  summary.parked = await parkedSubscriptions(db, {
    orgId: options.orgId,
    subscriptionIds: options.subscriptionIds,
  });

  if (options.afterPosting && postedFor.size) await options.afterPosting([...postedFor.values()]);
  billingRunInvoices.inc(summary.invoices_created);
  billingRunDuration.observe(secondsSince(started));
  summary.duration_ms = Math.round(Number(process.hrtime.bigint() - started) / 1e6);
  report();
  return summary;
}

/** Refusals of stored data: a run reads nothing else, so the next run would meet them again. */
const REFUSALS: ReadonlySet<ErrorCode> = new Set(['NOT_FOUND', 'CONFLICT', 'VALIDATION_ERROR']);

/**
 * Why a subscription's billing fails for good, or undefined when a retry may succeed (a database
 * error, a dependency down). An UnbillableError (composing the period's invoice cannot succeed),
 * and any other refusal the domain raises over what the run read, such as a scheduled change that
 * no longer fits an invoice: the same stored data meets the same refusal on every run.
 */
function retryCannotFix(error: unknown): string | undefined {
  if (error instanceof UnbillableError) return error.reason;
  if (!(error instanceof ApiError) || !REFUSALS.has(error.code)) return undefined;
  const fields = (error.details ?? []).map((detail) => `${detail.field}: ${detail.message}`);
  return fields.length ? fields.join('; ') : error.message;
}

interface BatchContext {
  /** The instant credits are judged at when posting ("effective, not expired"). */
  postingTime: () => Date;
  now: Date;
  post: boolean;
  orgId: number | undefined;
  subscriptionIds: readonly number[] | undefined;
  exclude: number[];
  usage: UsageForTransaction;
}

/** What one committed batch did; added to the summary only once its transaction committed. */
type BatchResult = Pick<
  BillingRunSummary,
  'subscriptions_started' | 'trials_ended' | 'renewed' | 'canceled' | 'expired' | 'invoice_ids'
> & { claimed: number; postedFor: { orgId: number; customerId: number }[] };

function addPostedFor(posted: Map<string, { orgId: number; customerId: number }>, result: BatchResult): void {
  for (const customer of result.postedFor) posted.set(`${customer.orgId}|${customer.customerId}`, customer);
}

function addToSummary(summary: BillingRunSummary, result: BatchResult): void {
  summary.subscriptions_processed += result.claimed;
  summary.invoices_created += result.invoice_ids.length;
  summary.invoice_ids.push(...result.invoice_ids);
  summary.subscriptions_started += result.subscriptions_started;
  summary.trials_ended += result.trials_ended;
  summary.renewed += result.renewed;
  summary.canceled += result.canceled;
  summary.expired += result.expired;
}

/** One batch in one transaction; `claimed` 0 means nothing is due any more. */
async function billBatch(
  tx: Queryable,
  context: BatchContext,
  limit: number,
  onClaimed: (ids: number[]) => void,
): Promise<BatchResult> {
  const claimed = await claimDueSubscriptions(
    tx,
    {
      now: context.now,
      orgId: context.orgId,
      subscriptionIds: context.subscriptionIds,
      exclude: context.exclude,
    },
    limit,
  );
  onClaimed(claimed.map((s) => s.id));
  const result: BatchResult = { ...emptyBatchResult(), claimed: claimed.length, postedFor: [] };
  if (claimed.length === 0) return result;

  const plans: BillingPlan[] = claimed.map((subscription) => ({
    subscription,
    ...planBilling(subscription, context.now),
  }));
  // periods whose draft was withdrawn before it was posted come first (they are the older ones)
  const rebills = await takeRebillPeriods(tx, claimed);
  const changes = await takeDueChanges(
    tx,
    plans.map(({ subscription, next }) => ({
      id: subscription.id,
      org_id: subscription.org_id,
      // a subscription that stops takes every change it has: none outlives it
      boundary: stops(next) ? 'infinity' : next.current_period_start.toISOString(),
    })),
  );
  const changeOf = new Map(changes.map((change) => [change.subscription_id, change]));
  const periods = plans.flatMap(({ subscription, steps }) =>
    steps
      .filter((step): step is InvoiceStep => step.kind === 'invoice')
      .map((step) => ({ subscription, step })),
  );
  // A run catching up several periods bills those before a change's boundary at the old items and
  // those from it at the new ones, as runs on time would have: first the periods before any
  // boundary, then the changes, then the periods after them.
  const afterChange = ({ subscription, step }: InvoiceTarget) => {
    const change = changeOf.get(subscription.id);
    return change !== undefined && step.periodStart >= change.effective_at;
  };
  const before: InvoiceTarget[] = [
    ...rebills.map((rebill) => ({
      subscription: claimed.find((s) => s.id === rebill.subscription_id)!,
      step: {
        kind: 'invoice' as const,
        periodStart: rebill.period_start,
        periodEnd: rebill.period_end,
        firstPeriod: rebill.first_period,
      },
      terms: rebill.billed_terms,
    })),
    ...periods.filter((target) => !afterChange(target)),
  ];
  const first = await createInvoices(tx, context, before);
  const changeEvents = await applyDueChanges(tx, plans, changes);
  const second = await createInvoices(tx, context, periods.filter(afterChange));
  const invoices = [...first.invoices, ...second.invoices];

  await updateSubscriptions(
    tx,
    plans.map(({ subscription, next }) => ({
      id: subscription.id,
      org_id: subscription.org_id,
      status: next.status,
      current_period_start: next.current_period_start,
      current_period_end: next.current_period_end,
      next_billing_date: next.next_billing_date,
      subscription_end_date: next.subscription_end_date,
      ended_at: next.ended_at,
    })),
  );

  const events: DomainEvent[] = [
    ...changeEvents,
    ...invoices.flatMap(postingEvents),
    ...first.events,
    ...second.events,
  ];
  for (const { subscription, steps } of plans) {
    for (const step of steps) {
      if (step.kind === 'renewed') result.renewed++;
      if (step.kind !== 'status') continue;
      if (step.reason === 'started') result.subscriptions_started++;
      if (step.reason === 'trial_ended') result.trials_ended++;
      if (step.to === 'expired') result.expired++;
      if (step.to === 'canceled') {
        result.canceled++;
        events.push({
          orgId: subscription.org_id,
          type: 'subscription.canceled',
          data: subscriptionEventData({ ...subscription, status: 'canceled' }),
        });
      }
    }
  }
  await emitDomainEvents(tx, events);
  result.invoice_ids = invoices.map((invoice) => invoice.id);
  result.postedFor = invoices
    .filter((invoice) => invoice.posted)
    .map((invoice) => ({ orgId: invoice.org_id, customerId: invoice.customer_id }));
  return result;
}

/**
 * Late usage of ended subscriptions (docs/decisions.md "Late usage of an ended subscription"): a
 * canceled or expired subscription has no next invoice to carry its late lines, so each run
 * compares its posted periods with what is counted and, where usage grew, posts an invoice of the
 * late lines alone, dated the run's instant. Batches of claimed subscriptions, each in its own
 * transaction, as the due ones; a batch that fails is retried one by one, and what still fails is
 * reported among the run's failures and left for the next run (its periods stay dirty: nothing is
 * lost). Posting runs only: a draft of
 * late lines alone would have no period of its own to be re-rated against.
 */
async function billEndedLateUsage(
  db: Database | Queryable,
  context: BatchContext,
  limit: number,
): Promise<BatchResult & Pick<BillingRunSummary, 'failures'>> {
  const total: BatchResult & Pick<BillingRunSummary, 'failures'> = {
    ...emptyBatchResult(),
    postedFor: [],
    failures: [],
  };
  const exclude = [...context.exclude];
  const billOnce = async (
    tx: Queryable,
    subscriptionIds: readonly number[] | undefined,
    size: number,
    onClaimed: (ids: number[]) => void,
  ) => {
    const claimed = await claimEndedWithLateUsage(
      tx,
      { orgId: context.orgId, subscriptionIds, exclude, day: utcDate(context.now) },
      POSTED_STATUSES,
      size,
    );
    onClaimed(claimed.map((subscription) => subscription.id));
    if (claimed.length === 0) return { claimed, invoices: [] as NewInvoice[] };
    const at = context.now;
    const { invoices, events } = await createInvoices(
      tx,
      context,
      claimed.map((subscription) => ({
        subscription,
        step: { kind: 'invoice' as const, periodStart: at, periodEnd: at, firstPeriod: false },
        lateUsageOnly: { at },
      })),
    );
    await emitDomainEvents(tx, [...invoices.flatMap(postingEvents), ...events]);
    return { claimed, invoices };
  };
  const add = (invoices: NewInvoice[]) => {
    total.invoice_ids.push(...invoices.map((invoice) => invoice.id));
    total.postedFor.push(
      ...invoices
        .filter((invoice) => invoice.posted)
        .map((invoice) => ({ orgId: invoice.org_id, customerId: invoice.customer_id })),
    );
  };
  await billInBatches(
    db,
    (tx, only, onClaimed) =>
      only === undefined
        ? billOnce(tx, context.subscriptionIds, limit, onClaimed)
        : billOnce(tx, [only], 1, onClaimed),
    {
      committed(result, ids) {
        // compared (made clean) or invoiced: either way not claimed again by this run
        exclude.push(...ids);
        add(result.invoices);
      },
      async failed(id, error) {
        // left dirty: the next run compares it again
        total.failures.push({ subscription_id: id, error: (error as Error).message });
        exclude.push(id);
      },
    },
  );
  return total;
}

/**
 * Claims and bills batches until a claim finds nothing, each batch in its own transaction. One bad
 * subscription must not stop everyone's billing: a batch that fails is retried one subscription at
 * a time (`only`), and each that still fails goes to `failed`. `bill` reports what it claimed
 * before anything else can fail. Inside a caller's transaction there is nothing to retry with: the
 * error is thrown.
 */
async function billInBatches<T>(
  db: Database | Queryable,
  bill: (tx: Queryable, only: number | undefined, onClaimed: (ids: number[]) => void) => Promise<T>,
  outcome: {
    committed(result: T, ids: readonly number[]): void;
    /** `database`: retries happen only on a Database, never inside a caller's transaction. */
    failed(id: number, error: unknown, database: Database): Promise<void>;
  },
): Promise<void> {
  for (;;) {
    let claimed: number[] = [];
    try {
      const result = await inTransaction(db, (tx) => bill(tx, undefined, (ids) => (claimed = ids)));
      if (claimed.length === 0) return;
      outcome.committed(result, claimed);
    } catch (error) {
      if (!isDatabase(db) || claimed.length === 0) throw error;
      for (const id of claimed) {
        try {
          outcome.committed(await db.transaction((tx) => bill(tx, id, () => {})), [id]);
        } catch (single) {
          await outcome.failed(id, single, db);
        }
      }
    }
  }
}

function emptyBatchResult(): Omit<BatchResult, 'postedFor'> {
  return {
    claimed: 0,
    invoice_ids: [],
    subscriptions_started: 0,
    trials_ended: 0,
    renewed: 0,
    canceled: 0,
    expired: 0,
  };
}

/** invoice.posted for a posted invoice, and invoice.paid when its credit paid it whole. */
function postingEvents(invoice: NewInvoice): DomainEvent[] {
  if (!invoice.posted) {
    return invoice.post_at
      ? [{ orgId: invoice.org_id, type: 'invoice.created', data: invoiceEventData(invoice) }]
      : [];
  }
  const posted: DomainEvent = {
    orgId: invoice.org_id,
    type: 'invoice.posted',
    data: invoiceEventData(invoice),
  };
  if (invoice.status !== 'PAID') return [posted];
  return [posted, { orgId: invoice.org_id, type: 'invoice.paid', data: invoiceEventData(invoice) }];
}

/**
 * The final invoice of a subscription canceled now, posted (docs/decisions.md, "An immediate cancel
 * bills the used part of its period"): its running period until `end.at`,
 * composed like any period's invoice, so it carries what the period accrued: licensed items to
 * the second (or the whole period with proration none), usage until the cancel, the proration
 * lines changes left waiting. `subscription` is held by the caller's transaction; its period must
 * not have ended (a period that ended is the billing run's). None when nothing of a paid period
 * ran (a trial, a period not begun) and no line waits.
 */
export async function invoiceUntilEnd(
  tx: Queryable,
  subscription: DueSubscription,
  end: SubscriptionEnd,
  usage: UsageForTransaction = (transaction) => new PostgresUsageAggregator(transaction),
): Promise<NewInvoice | undefined> {
  const paid =
    subscription.status === 'active' ||
    subscription.status === 'past_due' ||
    subscription.status === 'unpaid';
  if (!paid || subscription.current_period_end <= end.at) return undefined;
  const waiting = await pendingProrationLines(
    tx,
    subscription.org_id,
    [subscription.id],
    subscription.current_period_end,
  );
  if (end.at <= subscription.current_period_start && !waiting.get(subscription.id)?.length) return undefined;
  const firstPaidStart = subscription.trial_end_date ?? subscription.start_date;
  const step: InvoiceStep = {
    kind: 'invoice',
    periodStart: subscription.current_period_start,
    periodEnd: subscription.current_period_end,
    firstPeriod: subscription.current_period_start.getTime() === firstPaidStart.getTime(),
  };
  const context: BatchContext = {
    now: end.at,
    post: true,
    orgId: subscription.org_id,
    subscriptionIds: [subscription.id],
    exclude: [],
    usage,
    postingTime: () => new Date(),
  };
  const { invoices, events } = await createInvoices(tx, context, [{ subscription, step, end }]);
  await emitDomainEvents(tx, [...postingEvents(invoices[0]!), ...events]);
  return invoices[0];
}

/**
 * The batch's invoices: inputs read, numbers reserved, lines composed (composePeriodInvoice, the
 * one composition the upcoming-invoice preview shares), credit settled when posting, then written.
 */
async function createInvoices(
  tx: Queryable,
  context: BatchContext,
  targets: InvoiceTarget[],
): Promise<{ invoices: NewInvoice[]; events: DomainEvent[] }> {
  if (targets.length === 0) return { invoices: [], events: [] };
  const inputs = await loadInvoiceInputs(
    tx,
    { usage: context.usage(tx), lockCustomers: context.post, lockBilled: true },
    targets,
  );
  // an ended subscription's late usage that did not grow is compared (made clean) and not invoiced
  const toInvoice = targets.filter(
    (target) =>
      !target.lateUsageOnly ||
      (inputs.lateLines.get(usageKey(target.subscription, target.step)) ?? []).length > 0,
  );
  const numbering = await reserveNumbering(tx, toInvoice);
  const invoices = toInvoice.map((target) => composeInvoice(target, inputs, numbering, context));
  const credits = context.post
    ? await planCreditsOnPosting(
        tx,
        invoices.map((invoice) => postingOf(invoice, inputs)),
        context.postingTime(),
      )
    : { uses: [], events: [] };
  invoices.forEach((invoice, index) => {
    if (!invoice.posted) return;
    invoice.amount_paid = creditsApplied(credits.uses[index] ?? []);
    invoice.status = statusForAmountPaid(parseMoney(invoice.total), parseMoney(invoice.amount_paid));
  });
  await insertInvoices(tx, invoices);
  await insertBilledPeriods(
    tx,
    toInvoice.flatMap((target, index) => billedPeriodsOf(target, inputs, invoices[index]!.id)),
  );
  await recordLateBillings(
    tx,
    toInvoice.flatMap((target, index) =>
      (inputs.lateLines.get(usageKey(target.subscription, target.step)) ?? []).map((line) => ({
        invoice_id: invoices[index]!.id,
        line,
      })),
    ),
    inputs.compared,
  );
  const depleted = await recordCreditsOnPosting(tx, invoices, credits);
  await markProrationLinesInvoiced(
    tx,
    toInvoice.flatMap((target, index) =>
      (inputs.prorationLines.get(usageKey(target.subscription, target.step)) ?? []).map((line) => ({
        id: line.id,
        invoice_id: invoices[index]!.id,
      })),
    ),
  );
  return { invoices, events: [...credits.events, ...depleted] };
}

/** What `target`'s invoice bills of each metered item's period (usage_billed_periods). */
function billedPeriodsOf(target: InvoiceTarget, inputs: InvoiceInputs, invoiceId: string): NewBilledPeriod[] {
  const { subscription, step } = target;
  if (target.lateUsageOnly) return [];
  const period = { start: step.periodStart, end: step.periodEnd };
  const usage = inputs.usage.get(usageKey(subscription, step));
  return targetItems(target, inputs).flatMap((item) => {
    const billed = item.usage_type === 'metered' ? itemForPeriod(item, period) : undefined;
    if (!billed) return [];
    const window = usageWindow(billed, period);
    return [
      {
        org_id: subscription.org_id,
        subscription_id: subscription.id,
        subscription_item_id: item.subscription_item_id,
        period_start: step.periodStart,
        period_end: step.periodEnd,
        window_start: window.start,
        window_end: window.end < window.start ? window.start : window.end,
        invoice_id: invoiceId,
        period_quantity: usage?.get(item.subscription_item_id) ?? '0.00000000',
        included_units: billed.included_units,
        unit_price: billed.unit_price,
      },
    ];
  });
}

/** An invoice being posted as the credits' burn-down sees it. */
function postingOf(invoice: NewInvoice, inputs: InvoiceInputs): PostingInvoice {
  // late-usage lines bill metered items too, including items removed (or a subscription ended) since
  const metered = new Set([
    ...(inputs.items.get(invoice.subscription_id!) ?? [])
      .filter((item) => item.usage_type === 'metered')
      .map((item) => item.subscription_item_id),
    ...[...inputs.lateLines.values()].flat().map((line) => line.subscription_item_id),
  ]);
  const usage = invoice.lines
    .filter((line) => line.subscription_item_id !== null && metered.has(line.subscription_item_id))
    .reduce((sum, line) => sum + parseMoney(line.line_total_pre_tax) + parseMoney(line.tax_amount), 0n);
  return {
    id: invoice.id,
    org_id: invoice.org_id,
    customer_id: invoice.customer_id,
    currency: invoice.currency,
    balance: invoice.total,
    usage_amount: formatMoney(usage),
    prepaid_credits: false,
  };
}

interface OrgNumbering {
  next: number;
  paymentTermsDays: number;
  creditCurrency: string;
  graceHours: number;
}

/** Numbers are reserved per organization in id order, the lock order every run follows. */
async function reserveNumbering(
  tx: Queryable,
  toInvoice: InvoiceTarget[],
): Promise<Map<number, OrgNumbering>> {
  const numbering = new Map<number, OrgNumbering>();
  for (const orgId of unique(toInvoice.map(({ subscription }) => subscription.org_id)).sort(
    (a, b) => a - b,
  )) {
    const count = toInvoice.filter(({ subscription }) => subscription.org_id === orgId).length;
    const reserved = await reserveInvoiceNumbers(tx, orgId, count);
    numbering.set(orgId, { ...reserved, next: reserved.first });
  }
  return numbering;
}

function composeInvoice(
  target: InvoiceTarget,
  inputs: InvoiceInputs,
  numbering: Map<number, OrgNumbering>,
  context: BatchContext,
): NewInvoice {
  const { subscription, step, lateUsageOnly } = target;
  // a late-usage-only invoice is billed until the run's instant, like a cancel's final invoice
  const end = target.end ?? lateUsageOnly;
  const org = numbering.get(subscription.org_id)!;
  const input = periodInvoiceInput(target, inputs);
  const draft = composePeriodInvoice(input);
  // a grace period keeps a period's invoice a DRAFT until it ends (docs/decisions.md "Grace drafts");
  // the final invoice of a cancel is posted at once
  const grace = context.post && !end && org.graceHours > 0;
  const posted = context.post && !grace;
  return {
    id: randomUUID(),
    org_id: subscription.org_id,
    invoice_number: formatInvoiceNumber(org.next++),
    customer_id: subscription.customer_id,
    subscription_id: subscription.id,
    invoice_date: draft.invoice_date,
    // late usage alone is dated the run's day: one such invoice per subscription and day
    ...(lateUsageOnly
      ? { period_start: draft.invoice_date, period_end: draft.invoice_date }
      : invoicePeriodDates(step.periodStart, end?.at ?? step.periodEnd)),
    due_date: addDays(draft.invoice_date, org.paymentTermsDays),
    status: 'DRAFT',
    subtotal: draft.subtotal,
    tax_amount: draft.tax_amount,
    total: draft.total,
    amount_paid: formatMoney(0n),
    currency: subscription.currency.trim(),
    posted,
    lines: draft.lines,
    billed_from: step.periodStart.toISOString(),
    billed_until: (end?.at ?? step.periodEnd).toISOString(),
    first_period: step.firstPeriod,
    post_at: grace ? new Date(step.periodEnd.getTime() + org.graceHours * 3_600_000).toISOString() : null,
    // a draft keeps what it billed each item at: a change since must not reprice its period
    billed_terms: posted
      ? null
      : billedTermsOf(input.items, { start: step.periodStart, end: step.periodEnd }),
  };
}

/** A claimed subscription and what the run does to it (planBilling). */
interface BillingPlan {
  subscription: DueSubscription;
  steps: ScheduleStep[];
  next: SubscriptionSchedule;
}

/** Whether the run ends the subscription (canceled at its period end, a term run out). */
function stops(next: SubscriptionSchedule): boolean {
  return !(BILLABLE_STATUSES as readonly string[]).includes(next.status);
}

/**
 * Scheduled changes (effective "period_end") whose boundary this batch passed (takeDueChanges):
 * each applied as it was asked for, on the period that begins at its boundary (nothing of the
 * periods before is touched: they are invoiced at the old items), with subscription.updated. A
 * change at or after the instant its subscription stops is dropped: no period of it is left.
 */
async function applyDueChanges(
  tx: Queryable,
  plans: readonly BillingPlan[],
  changes: readonly DueChange[],
): Promise<DomainEvent[]> {
  const events: DomainEvent[] = [];
  for (const change of changes) {
    const { subscription, steps, next } = plans.find(
      (plan) => plan.subscription.id === change.subscription_id,
    )!;
    const period = periodFrom(change.effective_at, steps, next);
    if (!period) continue;
    const changing = {
      id: subscription.id,
      org_id: subscription.org_id,
      currency: subscription.currency,
      billing_period: subscription.billing_period,
      current_period_start: period.start,
      current_period_end: period.end,
    };
    const current = (
      (await loadBillableItems(tx, [subscription.org_id], [subscription.id])).get(subscription.id) ?? []
    ).filter((item) => !item.removed_at);
    // the set was checked when it was scheduled; an immediate change since would have replaced it
    const resolved: ResolvedEntry[] = change.items;
    if (
      resolved.some(
        (entry) => entry.id !== null && !current.some((item) => item.subscription_item_id === entry.id),
      )
    ) {
      continue;
    }
    const applied = await applyItemSet(tx, changing, current, resolved, { at: period.start, mode: 'direct' });
    // a set that keeps the items as they are wrote nothing: no event says they changed
    if (changesNothing(applied)) continue;
    events.push({
      orgId: subscription.org_id,
      type: 'subscription.updated',
      data: subscriptionUpdatedEventData({ ...subscription, status: next.status }, applied),
    });
  }
  return events;
}

/**
 * The period of the subscription beginning at `at` within this run: one it invoices, or the one
 * it runs into. None when the subscription stops at or before `at`.
 */
function periodFrom(
  at: Date,
  steps: readonly ScheduleStep[],
  next: SubscriptionSchedule,
): { start: Date; end: Date } | undefined {
  const invoiced = steps.find(
    (step): step is InvoiceStep => step.kind === 'invoice' && step.periodStart.getTime() === at.getTime(),
  );
  if (invoiced) return { start: invoiced.periodStart, end: invoiced.periodEnd };
  // a subscription that stops keeps the start of its last period: a boundary at its end finds none
  if (next.current_period_start.getTime() !== at.getTime()) return undefined;
  return { start: next.current_period_start, end: next.current_period_end };
}

function isDatabase(db: Database | Queryable): db is Database {
  return typeof (db as Partial<Database>).transaction === 'function';
}

function inTransaction<T>(db: Database | Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return isDatabase(db) ? db.transaction(fn) : fn(db);
}
