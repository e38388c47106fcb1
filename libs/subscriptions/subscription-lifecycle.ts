import { z } from 'zod';
import {
  addDaysToInstant,
  addMonthsAnchored,
  assertSubscriptionTransition,
  BILLABLE_STATUSES,
  fixedChargeProblems,
  invoiceUntilEnd,
  loadBillableItems,
  loadSubscriptionSchedule,
  moneyInput,
  PERIOD_MONTHS,
  parseInput,
  periodEndAfter,
  quantityInput,
  subscriptionEventData,
  UnbillableError,
  type UsageForTransaction,
} from '../billing/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError, type FieldError } from '../errors/index.js';
import { emitDomainEvent } from '../events/index.js';
import { isBillableCurrency } from '../money/index.js';
import { regionProblem } from '../regions/index.js';
import {
  BILLING_PERIODS,
  type BillingPeriod,
  HORIZON_MESSAGE,
  HORIZON_MS,
  type Subscription,
  type SubscriptionStatus,
} from '../schemas/index.js';
import { getSubscription } from './subscriptions.js';

/**
 * Creating and canceling subscriptions (console operations). The state machine of DESIGN §6
 * guards every status change; billing runs move subscriptions forward in time (libs/billing).
 */

export const NewSubscriptionItem = z.strictObject({
  product_id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  quantity: z.number().int().min(0).max(1_000_000).optional(),
  /** Metered items only: usage per period that is not charged. */
  included_units: quantityInput.optional(),
  /** Default: the product's unit price (linear prices; tiered prices use the product's tiers). */
  unit_price: moneyInput.optional(),
});

export const NewSubscription = z
  .strictObject({
    customer_id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    items: z.array(NewSubscriptionItem).min(1).max(100),
    title: z.string().max(255).optional(),
    trial_days: z.number().int().min(0).max(730).default(0),
    /** Default: the first item's product's default billing period. */
    billing_period: z.enum(BILLING_PERIODS).optional(),
    term_type: z.enum(['evergreen', 'termed']).default('evergreen'),
    /** Termed subscriptions only; a whole number of billing periods. */
    initial_term_months: z.number().int().min(1).max(120).optional(),
    auto_renew: z.boolean().default(true),
    /** Default: now. In the future, the subscription is pending until then. */
    start_date: z.date().optional(),
  })
  // Judged on the input alone, before any record is read (the console's usage errors, exit 2).
  .superRefine((data, ctx) => {
    if (data.term_type === 'termed' && data.initial_term_months === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['initial_term_months'],
        message: 'A termed subscription needs an initial term in months.',
        params: { code: 'required' },
      });
    }
    if (data.term_type !== 'termed' && data.initial_term_months !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['initial_term_months'],
        message: 'Only a termed subscription has an initial term.',
      });
    }
    // the dates derived from the start (its periods, trial and term) must stay ones every store holds
    if (data.start_date !== undefined && !(data.start_date.getTime() < HORIZON_MS)) {
      ctx.addIssue({
        code: 'custom',
        path: ['start_date'],
        message: HORIZON_MESSAGE,
        params: { code: 'out_of_range' },
      });
    }
  });
export type NewSubscription = z.input<typeof NewSubscription>;

interface ProductRow {
  id: number;
  name: string;
  pricing_type: 'one_time' | 'recurring' | 'usage';
  unit_price: string;
  currency: string;
  is_active: boolean;
  default_billing_period: BillingPeriod;
}

/**
 * An item is metered when its product's pricing_type is `usage`. All items share one currency,
 * which becomes the subscription's (an invoice never mixes currencies). Billing periods anchor on
 * the day the first paid period starts: the trial end, or the start. Emits subscription.created.
 */
export async function createSubscription(
  tx: Queryable,
  orgId: number,
  input: NewSubscription,
  options: { now?: Date } = {},
): Promise<Subscription> {
  const data = parseInput(NewSubscription, input);
  const now = options.now ?? new Date();

  const customer = await tx.query<{ country: string; state_province: string | null; tax_exempt: boolean }>(
    'SELECT country, state_province, tax_exempt FROM customers WHERE org_id = $1 AND id = $2',
    [orgId, data.customer_id],
  );
  const destination = customer.rows[0];
  if (!destination) throw ApiError.notFound(`Customer ${data.customer_id}`);
  const { rows } = await tx.query<ProductRow>(
    `SELECT id, name, pricing_type, unit_price, currency, is_active, default_billing_period
       FROM products WHERE org_id = $1 AND id = ANY($2::bigint[])`,
    [orgId, data.items.map((item) => item.product_id)],
  );
  const products = new Map(rows.map((row) => [row.id, { ...row, currency: row.currency.trim() }]));
  const problems: FieldError[] = [];
  // its invoices are taxed by the customer's region: one the tax table does not know could only
  // be taxed at a guess (docs/decisions.md "A customer's region is one the tax table knows")
  const region = destination.tax_exempt
    ? undefined
    : regionProblem(destination.country, destination.state_province, { required: true });
  if (region) {
    const given = destination.state_province?.trim();
    problems.push({
      field: 'customer_id',
      message:
        `Customer ${data.customer_id} is in ${destination.country.trim()} ` +
        (given
          ? `with state_province ${JSON.stringify(given)}, which the tax table does not know`
          : 'without a state_province') +
        `, so its invoices cannot be taxed; set it with customer update first (${region.message})`,
      code: 'invalid_value',
    });
  }
  const lines = data.items.map((item, index) => {
    const product = products.get(item.product_id);
    if (!product) throw ApiError.notFound(`Product ${item.product_id}`);
    const metered = product.pricing_type === 'usage';
    if (!product.is_active) {
      problems.push({
        field: `items.${index}.product_id`,
        message: `Product ${product.id} is not active.`,
        code: 'invalid_value',
      });
    }
    if (!isBillableCurrency(product.currency)) {
      // a product stored before currencies were checked: no invoice could ever be made in it
      problems.push({
        field: `items.${index}.product_id`,
        message: `Product ${product.id} is priced in ${product.currency}, a currency that cannot be billed.`,
        code: 'invalid_value',
      });
    }
    if (!metered && item.included_units !== undefined && /[1-9]/.test(item.included_units)) {
      problems.push({
        field: `items.${index}.included_units`,
        message: 'Only metered items (products with pricing_type usage) have included units.',
        code: 'invalid_value',
      });
    }
    return { item, product, metered };
  });
  const currencies = [...new Set(lines.map((line) => line.product.currency))];
  if (currencies.length > 1) {
    problems.push({
      field: 'items',
      message: `All items must be priced in one currency; these products use ${currencies.join(' and ')}.`,
      code: 'invalid_value',
    });
  }
  // A price is per its product's billing period: a monthly price billed once a year (or an annual
  // one every month) would be a wrong bill, so recurring and metered items must all have the
  // subscription's period. One-time items are charged once, whatever the period.
  const periodic = lines.filter((line) => line.product.pricing_type !== 'one_time');
  if (periodic.length === 0 && lines.length > 0) {
    // Billed once, then an empty (zero) invoice every period after, forever: not a subscription.
    problems.push({
      field: 'items',
      message:
        'A subscription needs at least one recurring or usage item; one-time items alone are a one-off charge.',
      code: 'invalid_value',
    });
  }
  const billingPeriod = data.billing_period ?? (periodic[0] ?? lines[0]!).product.default_billing_period;
  periodic.forEach((line) => {
    if (line.product.default_billing_period !== billingPeriod) {
      problems.push({
        field: `items.${lines.indexOf(line)}.product_id`,
        message: `Product ${line.product.id} is priced ${line.product.default_billing_period}; this subscription is billed ${billingPeriod}.`,
        code: 'invalid_value',
      });
    }
  });
  if (
    data.term_type === 'termed' &&
    data.initial_term_months !== undefined &&
    data.initial_term_months % PERIOD_MONTHS[billingPeriod] !== 0
  ) {
    problems.push({
      field: 'initial_term_months',
      message: `Must be a whole number of ${billingPeriod} periods (a multiple of ${PERIOD_MONTHS[billingPeriod]}).`,
      code: 'invalid_value',
    });
  }
  if (problems.length) throw ApiError.validation(problems);

  // Periods run from midnight UTC: invoices label them by date, so a boundary at another time of
  // day would bill usage of the boundary date's early hours on the invoice of the period before.
  const start = startOfUtcDay(data.start_date ?? now);
  const trialEnd = data.trial_days > 0 ? addDaysToInstant(start, data.trial_days) : null;
  const firstPaidStart = trialEnd ?? start;
  const anchorDay = firstPaidStart.getUTCDate();
  const firstPeriodEnd = trialEnd ?? periodEndAfter(start, billingPeriod, anchorDay);
  // A start in the future waits as pending; a start in the past is caught up by the next billing run.
  const status: SubscriptionStatus = start > now ? 'pending' : trialEnd ? 'trialing' : 'active';
  const termEnd =
    data.term_type === 'termed'
      ? addMonthsAnchored(firstPaidStart, data.initial_term_months!, anchorDay)
      : null;
  const title =
    data.title ??
    lines
      .map((line) => line.product.name)
      .join(', ')
      .slice(0, 255);

  const inserted = await tx.query<{ id: number; customer_id: number; status: SubscriptionStatus }>(
    `INSERT INTO subscriptions (org_id, customer_id, status, title, currency, start_date, next_billing_date,
       billing_period, billing_anchor_day, current_period_start, current_period_end, term_type, initial_term_months,
       auto_renew, subscription_end_date, trial_end_date)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
     RETURNING id, customer_id, status`,
    [
      orgId,
      data.customer_id,
      status,
      title,
      currencies[0],
      start,
      status === 'pending' ? start : firstPeriodEnd,
      billingPeriod,
      anchorDay,
      start,
      firstPeriodEnd,
      data.term_type,
      data.initial_term_months ?? null,
      data.auto_renew,
      termEnd,
      trialEnd,
    ],
  );
  const subscription = inserted.rows[0]!;
  await tx.query(
    `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type,
       included_units)
     SELECT $1, $2, product_id, quantity, unit_price, usage_type, included_units
       FROM jsonb_to_recordset($3::jsonb) AS x(product_id bigint, quantity integer, unit_price numeric,
            usage_type text, included_units numeric)`,
    [
      orgId,
      subscription.id,
      JSON.stringify(
        lines.map(({ item, product, metered }) => ({
          product_id: product.id,
          quantity: item.quantity ?? 1,
          unit_price: item.unit_price ?? product.unit_price,
          usage_type: metered ? 'metered' : 'licensed',
          included_units: metered ? (item.included_units ?? '0') : '0',
        })),
      ),
    ],
  );
  // Priced by the billing run's own code, from the rows just written (the whole transaction rolls
  // back on a refusal): what is charged whatever the usage must fit an invoice.
  const billable = (await loadBillableItems(tx, [orgId], [subscription.id])).get(subscription.id) ?? [];
  const tooLarge = fixedChargeProblems(billable);
  if (tooLarge.length) throw ApiError.validation(tooLarge);
  await emitDomainEvent(tx, {
    orgId,
    type: 'subscription.created',
    data: subscriptionEventData(subscription),
  });
  return getSubscription(tx, orgId, subscription.id);
}

/** How a cancel now bills the running period: where usage is read, how licensed items are credited. */
export interface FinalInvoiceOptions {
  /** Default: the usage events in Postgres, through the transaction (exact in both modes). */
  usage?: UsageForTransaction | undefined;
  /** `prorate` (default): licensed items to the second; `none`: the whole period. */
  proration?: 'prorate' | 'none' | undefined;
}

/**
 * Cancels now (status canceled, billing stops; the running period's used part is invoiced and
 * posted at once, see invoiceUntilEnd; emits subscription.canceled) or at the end of the current
 * period (the billing run invoices that last period, then cancels and emits
 * subscription.canceled). Found by id, or only within `orgId`. Returns the subscription and the
 * final invoice's id, if one was made.
 */
export async function cancelSubscription(
  tx: Queryable,
  input: {
    subscriptionId: number;
    orgId?: number | undefined;
    atPeriodEnd?: boolean | undefined;
    /**
     * Ends it now without invoicing the periods that ended (an operator's way out for a
     * subscription that can never be invoiced, such as a parked one); recorded on the row.
     */
    withoutInvoicing?: boolean | undefined;
    finalInvoice?: FinalInvoiceOptions | undefined;
    now?: Date;
  },
): Promise<Subscription & { final_invoice_id?: string }> {
  const now = input.now ?? new Date();
  const { rows } = await tx.query<{
    id: number;
    org_id: number;
    customer_id: number;
    status: SubscriptionStatus;
    cancel_at_period_end: boolean;
    current_period_start: Date;
    next_billing_date: Date;
    billing_parked_reason: string | null;
  }>(
    `SELECT id, org_id, customer_id, status, cancel_at_period_end, current_period_start, next_billing_date,
            billing_parked_reason
       FROM subscriptions
      WHERE id = $1 AND ($2::bigint IS NULL OR org_id = $2)
        FOR NO KEY UPDATE`,
    [input.subscriptionId, input.orgId ?? null],
  );
  const subscription = rows[0];
  if (!subscription) throw ApiError.notFound(`Subscription ${input.subscriptionId}`);
  assertSubscriptionTransition(subscription.id, subscription.status, 'canceled');
  if (now < subscription.current_period_start) {
    // Earlier periods are invoiced already: an end before the running period would contradict them.
    throw ApiError.conflict(
      `Subscription ${subscription.id} cannot end at ${now.toISOString()}, before its current period began ` +
        `(${subscription.current_period_start.toISOString()}); the periods before are invoiced.`,
    );
  }

  if (input.atPeriodEnd && input.finalInvoice?.proration !== undefined) {
    throw ApiError.validation([
      {
        field: 'proration',
        message:
          'Only a cancel now has a final invoice to prorate; at the period end the whole period is billed.',
        code: 'invalid_value',
      },
    ]);
  }
  if (input.withoutInvoicing && input.atPeriodEnd) {
    throw ApiError.validation([
      {
        field: 'without_invoicing',
        message: 'A subscription canceled without invoicing ends now, not at the end of its period.',
        code: 'invalid_value',
      },
    ]);
  }
  if (!input.withoutInvoicing && subscription.billing_parked_reason !== null) {
    throw ApiError.conflict(
      `Subscription ${subscription.id} is parked: its period from ${subscription.current_period_start.toISOString()} ` +
        `could not be invoiced (${subscription.billing_parked_reason}); cancel it without invoicing, or fix the ` +
        'cause and unpark it.',
    );
  }
  if (
    !input.withoutInvoicing &&
    (BILLABLE_STATUSES as readonly string[]).includes(subscription.status) &&
    subscription.next_billing_date <= now
  ) {
    // Billing is in arrears, so a period that ended must be invoiced before the end is recorded:
    // `subscription cancel` bills first, but its run skips a row another run holds, and that run
    // may have billed as of an earlier instant. Canceling now would lose the period for good.
    throw ApiError.conflict(
      `Subscription ${subscription.id} has a period that ended ${subscription.next_billing_date.toISOString()} and is ` +
        'not invoiced yet; run billing for it first (subscription cancel does), then cancel.',
    );
  }

  if (input.atPeriodEnd) {
    if (subscription.status === 'paused') {
      throw ApiError.conflict(
        `Subscription ${subscription.id} is paused and has no running period to end; cancel it now instead.`,
      );
    }
    if (subscription.cancel_at_period_end) {
      throw ApiError.conflict(
        `Subscription ${subscription.id} is already set to cancel at the end of its period.`,
      );
    }
    await tx.query(
      `UPDATE subscriptions SET cancel_at_period_end = true, canceled_at = $3, updated_at = now()
        WHERE org_id = $1 AND id = $2`,
      [subscription.org_id, subscription.id, now],
    );
  } else {
    let finalInvoiceId: string | undefined;
    if (!input.withoutInvoicing) {
      const schedule = await loadSubscriptionSchedule(tx, subscription.org_id, subscription.id);
      const invoice = await invoiceUntilEnd(
        tx,
        schedule!,
        { at: now, proration: input.finalInvoice?.proration ?? 'prorate' },
        input.finalInvoice?.usage,
      ).catch((error: unknown) => {
        if (!(error instanceof UnbillableError)) throw error;
        throw ApiError.conflict(
          `Subscription ${subscription.id}'s running period cannot be invoiced (${error.reason}); nothing was ` +
            'canceled: cancel it without invoicing, or fix the cause.',
        );
      });
      finalInvoiceId = invoice?.id;
    }
    await tx.query(
      `UPDATE subscriptions SET status = 'canceled', canceled_at = $3, ended_at = $3, updated_at = now(),
              canceled_without_invoicing = $4
        WHERE org_id = $1 AND id = $2`,
      [subscription.org_id, subscription.id, now, input.withoutInvoicing === true],
    );
    await emitDomainEvent(tx, {
      orgId: subscription.org_id,
      type: 'subscription.canceled',
      data: subscriptionEventData({ ...subscription, status: 'canceled' }),
    });
    const canceled = await getSubscription(tx, subscription.org_id, subscription.id);
    return finalInvoiceId ? { ...canceled, final_invoice_id: finalInvoiceId } : canceled;
  }
  return getSubscription(tx, subscription.org_id, subscription.id);
}

function startOfUtcDay(instant: Date): Date {
  return new Date(Date.UTC(instant.getUTCFullYear(), instant.getUTCMonth(), instant.getUTCDate()));
}

/**
 * Takes a parked subscription back into billing runs (its cause fixed: usage voided, a price
 * changed); the next run bills its periods that ended. Found by id, or only within `orgId`.
 */
export async function unparkSubscription(
  tx: Queryable,
  input: { subscriptionId: number; orgId?: number | undefined },
): Promise<Subscription> {
  const { rows } = await tx.query<{ org_id: number; billing_parked_at: Date | null }>(
    `SELECT org_id, billing_parked_at FROM subscriptions
      WHERE id = $1 AND ($2::bigint IS NULL OR org_id = $2) FOR NO KEY UPDATE`,
    [input.subscriptionId, input.orgId ?? null],
  );
  const subscription = rows[0];
  if (!subscription) throw ApiError.notFound(`Subscription ${input.subscriptionId}`);
  if (!subscription.billing_parked_at) {
    throw ApiError.conflict(`Subscription ${input.subscriptionId} is not parked.`);
  }
  await tx.query(
    `UPDATE subscriptions SET billing_parked_at = NULL, billing_parked_reason = NULL, updated_at = now()
      WHERE id = $1`,
    [input.subscriptionId],
  );
  return getSubscription(tx, subscription.org_id, input.subscriptionId);
}
