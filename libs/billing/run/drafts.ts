import type { Database, Queryable } from '../../db/index.js';
import { parseScaled } from '../../money/index.js';
import { PostgresUsageAggregator } from '../../usage/index.js';
import { lockInvoice, postInvoice } from '../collection/index.js';
import {
  atBilledTerms,
  type BilledTerms,
  composePeriodInvoice,
  insertInvoiceLines,
} from '../invoices/index.js';
import { loadBillableItemsSince } from '../item-set/index.js';
import type { ProrationLine } from '../pricing/index.js';
import {
  billedPeriodsOfInvoice,
  countBilledPeriods,
  lateLinesOfInvoice,
  rebilledPeriods,
} from './billed-periods.js';
import { loadCustomers, loadSubscriptionSchedule } from './billing-store.js';
import { periodUsage } from './invoice-inputs.js';

/**
 * Drafts of a period's invoice (a grace period's, or `billing run --draft`'s): re-rated when an
 * event of the period arrives late or is voided, by the composition the run and the upcoming
 * invoice share, and a grace draft posted once its grace has passed (docs/decisions.md "Grace
 * drafts").
 */

interface DraftRow {
  id: string;
  org_id: number;
  subscription_id: number | null;
  status: string;
  currency: string;
  billed_from: Date | null;
  billed_until: Date | null;
  first_period: boolean | null;
  billed_terms: BilledTerms | null;
}

/**
 * Re-composes a DRAFT period invoice over what Postgres counts now: its lines, tax and totals (its
 * version moves), and what it bills of each metered period. The lines of changes and the late-usage
 * lines it carries stay as they were. Answers whether anything changed. The invoice is locked
 * first, then its billed periods (an insert into the period waits for the commit and marks them
 * again), then the counts are read.
 */
export async function rerateDraft(tx: Queryable, orgId: number, invoiceId: string): Promise<boolean> {
  await lockInvoice(tx, { invoiceId, orgId });
  const { rows } = await tx.query<DraftRow>(
    `SELECT id, org_id, subscription_id, status, currency, billed_from, billed_until, first_period, billed_terms
       FROM invoices WHERE org_id = $1 AND id = $2`,
    [orgId, invoiceId],
  );
  const draft = rows[0];
  if (draft?.status !== 'DRAFT' || draft.subscription_id === null || !draft.billed_from) return false;
  const periods = await billedPeriodsOfInvoice(tx, orgId, invoiceId, { lock: true });
  const counted = await countBilledPeriods(tx, periods);
  const changed = periods.filter(
    (period) => parseScaled(counted.get(period)!, 8) !== parseScaled(period.period_quantity, 8),
  );
  if (changed.length === 0) {
    await rebilledPeriods(
      tx,
      periods.map((period) => ({ period, quantity: period.period_quantity })),
    );
    return false;
  }
  const subscription = (await loadSubscriptionSchedule(tx, orgId, draft.subscription_id))!;
  const periodStart = draft.billed_from;
  const periodEnd = periods[0]?.period_end ?? draft.billed_until!;
  const items = await loadBillableItemsSince(tx, [orgId], [subscription.id], periodStart);
  // the terms the period was billed at (a change since may have moved the item's own); a draft made
  // before they were kept has its metered items' in their billed periods
  const terms = new Map(periods.map((period) => [period.subscription_item_id, period]));
  items.set(
    subscription.id,
    draft.billed_terms
      ? atBilledTerms(items.get(subscription.id) ?? [], draft.billed_terms)
      : (items.get(subscription.id) ?? []).map((item) => {
          const billed = terms.get(item.subscription_item_id);
          return billed
            ? { ...item, included_units: billed.included_units, unit_price: billed.unit_price, base: null }
            : item;
        }),
  );
  const step = {
    kind: 'invoice' as const,
    periodStart,
    periodEnd,
    firstPeriod: draft.first_period ?? false,
  };
  const [customers, usage, prorationLines, lateLines] = [
    await loadCustomers(tx, [orgId], [subscription.customer_id], { lock: false }),
    await periodUsage(new PostgresUsageAggregator(tx), [{ subscription, step }], items),
    await prorationLinesOf(tx, orgId, invoiceId),
    await lateLinesOfInvoice(tx, orgId, invoiceId),
  ];
  const invoice = composePeriodInvoice({
    items: items.get(subscription.id) ?? [],
    currency: subscription.currency,
    usage: usage.get(`${subscription.id}|${periodStart.toISOString()}`) ?? new Map(),
    firstPeriod: step.firstPeriod,
    periodStart,
    periodEnd,
    prorationLines: [...prorationLines, ...lateLines],
    customer: customers.get(subscription.customer_id)!,
    endsAt: draft.billed_until && draft.billed_until < periodEnd ? draft.billed_until : undefined,
  });
  await tx.query('DELETE FROM invoice_items WHERE org_id = $1 AND invoice_id = $2', [orgId, invoiceId]);
  await insertInvoiceLines(tx, [{ id: invoiceId, org_id: orgId, lines: invoice.lines }]);
  await tx.query(
    `UPDATE invoices SET subtotal = $3, tax_amount = $4, total = $5, updated_at = now()
      WHERE org_id = $1 AND id = $2`,
    [orgId, invoiceId, invoice.subtotal, invoice.tax_amount, invoice.total],
  );
  await rebilledPeriods(
    tx,
    periods.map((period) => ({ period, quantity: counted.get(period)! })),
  );
  return true;
}

/**
 * `invoice post`: a DRAFT re-rated over what is counted now (late events, voids since it was
 * made), then posted, in the caller's transaction.
 */
export async function postDraft(
  tx: Queryable,
  ref: { invoiceId: string; orgId?: number | undefined; at?: Date },
): ReturnType<typeof postInvoice> {
  const invoice = await lockInvoice(tx, ref);
  if (invoice.status === 'DRAFT') await rerateDraft(tx, invoice.org_id, invoice.id);
  return postInvoice(tx, { ...ref, orgId: invoice.org_id });
}

async function prorationLinesOf(tx: Queryable, orgId: number, invoiceId: string): Promise<ProrationLine[]> {
  const { rows } = await tx.query<ProrationLine & { period_start: Date; period_end: Date }>(
    `SELECT subscription_item_id, product_id, description, quantity::text AS quantity, unit_price::text AS unit_price,
            amount::text AS amount, period_start, period_end
       FROM subscription_proration_lines WHERE org_id = $1 AND invoice_id = $2 ORDER BY id`,
    [orgId, invoiceId],
  );
  return rows.map((row) => ({
    ...row,
    subscription_item_id: Number(row.subscription_item_id),
    product_id: Number(row.product_id),
    period_start: new Date(row.period_start).toISOString(),
    period_end: new Date(row.period_end).toISOString(),
  }));
}

export interface DraftFilter {
  orgId?: number | undefined;
  subscriptionIds?: readonly number[] | undefined;
  /** Only the drafts of the periods these items' events fall in. */
  subscriptionItemIds?: readonly number[] | undefined;
}

/**
 * DRAFT invoices some of whose billed periods are dirty: what a late event or a void touched, in
 * (organization, id) order, so every pass and every process takes them in the same order.
 */
async function dirtyDrafts(db: Queryable, filter: DraftFilter): Promise<{ id: string; org_id: number }[]> {
  const { rows } = await db.query<{ id: string; org_id: number }>(
    `SELECT DISTINCT i.id, i.org_id
       FROM usage_billed_periods b JOIN invoices i ON i.org_id = b.org_id AND i.id = b.invoice_id
      WHERE b.dirty AND i.status = 'DRAFT'
        AND ($1::bigint IS NULL OR b.org_id = $1)
        AND ($2::bigint[] IS NULL OR b.subscription_id = ANY($2::bigint[]))
        AND ($3::bigint[] IS NULL OR b.subscription_item_id = ANY($3::bigint[]))
      ORDER BY i.org_id, i.id`,
    [filter.orgId ?? null, filter.subscriptionIds ?? null, filter.subscriptionItemIds ?? null],
  );
  return rows.map((row) => ({ ...row, org_id: Number(row.org_id) }));
}

/** Re-rates every draft a late event or a void touched (each in its own transaction); their ids. */
export async function rerateDirtyDrafts(
  db: Database | Queryable,
  filter: DraftFilter = {},
): Promise<string[]> {
  const rerated: string[] = [];
  for (const draft of await dirtyDrafts(db, filter)) {
    const changed = await inTransaction(db, (tx) => rerateDraft(tx, draft.org_id, draft.id));
    if (changed) rerated.push(draft.id);
  }
  return rerated;
}

/**
 * Grace drafts whose grace has passed by `now` (post_at <= now), each re-rated and posted in one
 * transaction: invoice.posted, the customer's credits applied as for any posting.
 */
export async function postDueGraceDrafts(
  db: Database | Queryable,
  options: {
    now: Date;
    postingTime?: Date;
    orgId?: number | undefined;
    subscriptionIds?: readonly number[] | undefined;
  },
): Promise<{ invoiceIds: string[]; customers: { orgId: number; customerId: number }[] }> {
  const { rows } = await db.query<{ id: string; org_id: number; customer_id: number }>(
    `SELECT id, org_id, customer_id FROM invoices
      WHERE status = 'DRAFT' AND post_at IS NOT NULL AND post_at <= $1
        AND ($2::bigint IS NULL OR org_id = $2)
        AND ($3::bigint[] IS NULL OR subscription_id = ANY($3::bigint[]))
      ORDER BY post_at, id`,
    [options.now, options.orgId ?? null, options.subscriptionIds ?? null],
  );
  const invoiceIds: string[] = [];
  const customers: { orgId: number; customerId: number }[] = [];
  for (const row of rows) {
    const orgId = Number(row.org_id);
    const posted = await inTransaction(db, async (tx) => {
      await rerateDraft(tx, orgId, row.id);
      const { rows: still } = await tx.query<{ status: string }>(
        'SELECT status FROM invoices WHERE org_id = $1 AND id = $2',
        [orgId, row.id],
      );
      // withdrawn or posted by hand meanwhile
      if (still[0]?.status !== 'DRAFT') return false;
      await postInvoice(tx, { invoiceId: row.id, orgId, at: options.postingTime ?? new Date() });
      return true;
    });
    if (!posted) continue;
    invoiceIds.push(row.id);
    customers.push({ orgId, customerId: Number(row.customer_id) });
  }
  return { invoiceIds, customers };
}

function isDatabase(db: Database | Queryable): db is Database {
  return typeof (db as Partial<Database>).transaction === 'function';
}

function inTransaction<T>(db: Database | Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return isDatabase(db) ? db.transaction(fn) : fn(db);
}
