import type { Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { type DomainEvent, emitDomainEvents } from '../../events/index.js';
import { getInvoice } from '../../invoices/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import { type InvoiceRecord as Invoice, type InvoiceStatus, uuid } from '../../schemas/index.js';
import {
  creditsApplied,
  lockCreditCustomer,
  lockGrantSoldBy,
  type PostingInvoice,
  planCreditsOnPosting,
  recordCreditsOnPosting,
  voidHeldGrant,
} from '../credits/index.js';
import { assertInvoiceTransition, invoiceEventData, utcDate } from '../domain/index.js';
import { restoreIfSettled } from './dunning.js';
import { statusForAmountPaid } from './settlement.js';

/**
 * Console operations on one invoice. Each takes a client inside a transaction and locks the
 * invoice first, so concurrent operations on one invoice apply one after the other. An invoice is
 * found by its id alone or, with `orgId`, only within that organization; either way every later
 * query uses the invoice's own organization.
 */

export interface InvoiceRef {
  invoiceId: string;
  orgId?: number | undefined;
}

export interface LockedInvoice {
  id: string;
  org_id: number;
  customer_id: number;
  /** null: a Prepaid credits invoice. */
  subscription_id: number | null;
  invoice_number: string;
  status: InvoiceStatus;
  total: string;
  amount_paid: string;
  amount_refunded: string;
  currency: string;
}

export async function lockInvoice(tx: Queryable, ref: InvoiceRef): Promise<LockedInvoice> {
  if (!uuid.safeParse(ref.invoiceId).success) throw ApiError.notFound(`Invoice ${ref.invoiceId}`);
  const { rows } = await tx.query<LockedInvoice>(
    `SELECT id, org_id, customer_id, subscription_id, invoice_number, status, total, amount_paid, amount_refunded,
            currency
       FROM invoices WHERE id = $1 AND ($2::bigint IS NULL OR org_id = $2)
        FOR UPDATE`,
    [ref.invoiceId, ref.orgId ?? null],
  );
  if (!rows[0]) throw ApiError.notFound(`Invoice ${ref.invoiceId}`);
  return { ...rows[0], currency: rows[0].currency.trim() };
}

/**
 * DRAFT -> POSTED. Posting pays what it can from the customer's credit grants first (CREDIT_MEMOs,
 * see libs/billing/credits), which may settle the invoice outright (PARTIALLY_PAID or PAID); emits
 * invoice.posted, and invoice.paid when it is settled. `at`: the instant grants are judged at.
 */
export async function postInvoice(tx: Queryable, ref: InvoiceRef & { at?: Date }): Promise<Invoice> {
  const invoice = await lockInvoice(tx, ref);
  assertInvoiceTransition(invoice.invoice_number, invoice.status, 'POSTED');
  await lockCreditCustomer(tx, invoice.customer_id, invoice.org_id);
  const { rows } = await tx.query<{ usage_amount: string; sells_credits: boolean }>(
    `SELECT (SELECT coalesce(sum(ii.line_total_pre_tax + ii.tax_amount), 0)
               FROM invoice_items ii JOIN subscription_items si ON si.org_id = ii.org_id AND si.id = ii.subscription_item_id
              WHERE ii.org_id = $1 AND ii.invoice_id = $2 AND si.usage_type = 'metered')::numeric(20, 8) AS usage_amount,
            EXISTS (SELECT 1 FROM credit_grants g WHERE g.org_id = $1 AND g.invoice_id = $2) AS sells_credits`,
    [invoice.org_id, invoice.id],
  );
  const posting: PostingInvoice = {
    id: invoice.id,
    org_id: invoice.org_id,
    customer_id: invoice.customer_id,
    currency: invoice.currency,
    balance: formatMoney(parseMoney(invoice.total) - parseMoney(invoice.amount_paid)),
    usage_amount: rows[0]!.usage_amount,
    prepaid_credits: rows[0]!.sells_credits,
  };
  const credits = await planCreditsOnPosting(tx, [posting], ref.at ?? new Date());
  const paid = parseMoney(invoice.amount_paid) + parseMoney(creditsApplied(credits.uses[0]!));
  const amountPaid = formatMoney(paid);
  const status = statusForAmountPaid(parseMoney(invoice.total), paid);
  await tx.query(
    `UPDATE invoices SET status = $3, amount_paid = $4, posted_at = now(), updated_at = now()
      WHERE org_id = $1 AND id = $2`,
    [invoice.org_id, invoice.id, status, amountPaid],
  );
  const depleted = await recordCreditsOnPosting(tx, [invoice], credits);
  const data = invoiceEventData({ ...invoice, status, amount_paid: amountPaid });
  const events: DomainEvent[] = [{ orgId: invoice.org_id, type: 'invoice.posted', data }];
  if (status === 'PAID') events.push({ orgId: invoice.org_id, type: 'invoice.paid', data });
  await emitDomainEvents(tx, [...events, ...credits.events, ...depleted]);
  return getInvoice(tx, invoice.org_id, invoice.id);
}

/**
 * DRAFT or POSTED -> WITHDRAWN: no longer collectible, so it no longer makes its subscription past
 * due; a Prepaid credits invoice voids the grant it sold.
 */
export async function withdrawInvoice(tx: Queryable, ref: InvoiceRef & { now?: Date }): Promise<Invoice> {
  const invoice = await lockInvoice(tx, ref);
  await withdrawLocked(tx, invoice, ref.now ?? new Date());
  return getInvoice(tx, invoice.org_id, invoice.id);
}

/** Withdraws an invoice the caller holds (lockInvoice). */
export async function withdrawLocked(tx: Queryable, invoice: LockedInvoice, now: Date): Promise<void> {
  assertInvoiceTransition(invoice.invoice_number, invoice.status, 'WITHDRAWN');
  await tx.query(
    `UPDATE invoices SET status = 'WITHDRAWN', updated_at = now() WHERE org_id = $1 AND id = $2`,
    [invoice.org_id, invoice.id],
  );
  await restoreIfSettled(tx, utcDate(now), invoice.org_id, invoice.subscription_id);
  if (invoice.status === 'DRAFT' && invoice.subscription_id !== null) await releaseDraftPeriod(tx, invoice);
  if (invoice.subscription_id === null) {
    // the grant it sold (held after the invoice: the lock order of every Prepaid credits path)
    await lockCreditCustomer(tx, invoice.customer_id, invoice.org_id);
    const grant = await lockGrantSoldBy(tx, invoice.org_id, invoice.id);
    if (grant) await voidHeldGrant(tx, grant);
  }
}

/**
 * A period's draft withdrawn before it was ever posted billed nothing: its period is billed again
 * by the next run (docs/decisions.md "A withdrawn draft's period is billed again"), with the lines
 * of changes it carried; the late usage it carried goes back to waiting for an invoice.
 */
async function releaseDraftPeriod(tx: Queryable, invoice: LockedInvoice): Promise<void> {
  const params = [invoice.org_id, invoice.id];
  await tx.query(
    `INSERT INTO subscription_rebill_periods (org_id, subscription_id, period_start, period_end, first_period,
       billed_terms)
     SELECT org_id, subscription_id, billed_from, billed_until, coalesce(first_period, false), billed_terms
       FROM invoices WHERE org_id = $1 AND id = $2 AND billed_from IS NOT NULL AND posted_at IS NULL
     ON CONFLICT DO NOTHING`,
    params,
  );
  await tx.query('DELETE FROM usage_billed_periods WHERE org_id = $1 AND invoice_id = $2', params);
  await tx.query(
    `WITH undone AS (
       DELETE FROM usage_late_billings WHERE org_id = $1 AND invoice_id = $2
       RETURNING org_id, subscription_item_id, period_start, quantity
     )
     UPDATE usage_billed_periods b SET late_quantity = b.late_quantity - u.quantity, dirty = true
       FROM undone u
      WHERE b.org_id = u.org_id AND b.subscription_item_id = u.subscription_item_id AND b.period_start = u.period_start`,
    params,
  );
  await tx.query(
    'UPDATE subscription_proration_lines SET invoice_id = NULL WHERE org_id = $1 AND invoice_id = $2',
    params,
  );
}
