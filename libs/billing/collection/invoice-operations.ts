import type { Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { emitDomainEvent } from '../../events/index.js';
import { getInvoice } from '../../invoices/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import { type InvoiceRecord as Invoice, type InvoiceStatus, uuid } from '../../schemas/index.js';
import { assertInvoiceTransition, invoiceEventData, utcDate } from '../domain/index.js';
import { applyCredits } from './customer-credit.js';
import { restoreIfSettled } from './dunning.js';
import { settleOnPosting } from './settlement.js';

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
  subscription_id: number;
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
 * DRAFT -> POSTED. Posting consumes the customer's credit balance first (a CREDIT_MEMO), which may
 * settle the invoice outright (PARTIALLY_PAID or PAID); emits invoice.posted, and invoice.paid
 * when it is settled.
 */
export async function postInvoice(tx: Queryable, ref: InvoiceRef): Promise<Invoice> {
  const invoice = await lockInvoice(tx, ref);
  assertInvoiceTransition(invoice.invoice_number, invoice.status, 'POSTED');
  // a customer's credit is in the organization's default currency: other invoices do not use it
  const { rows } = await tx.query<{ credit_balance: string }>(
    `SELECT c.credit_balance FROM customers c JOIN organizations o ON o.id = c.org_id
      WHERE c.org_id = $1 AND c.id = $2 AND o.default_currency = $3
        FOR NO KEY UPDATE OF c`,
    [invoice.org_id, invoice.customer_id, invoice.currency],
  );
  const settled = settleOnPosting(invoice.total, rows[0]?.credit_balance ?? '0');
  const amountPaid = formatMoney(parseMoney(invoice.amount_paid) + parseMoney(settled.credit_applied));
  await tx.query(
    `UPDATE invoices SET status = $3, amount_paid = $4, posted_at = now(), updated_at = now()
      WHERE org_id = $1 AND id = $2`,
    [invoice.org_id, invoice.id, settled.status, amountPaid],
  );
  if (parseMoney(settled.credit_applied) > 0n) {
    await applyCredits(tx, [
      {
        org_id: invoice.org_id,
        customer_id: invoice.customer_id,
        invoice_id: invoice.id,
        amount: settled.credit_applied,
      },
    ]);
  }
  const data = invoiceEventData({ ...invoice, status: settled.status, amount_paid: amountPaid });
  await emitDomainEvent(tx, { orgId: invoice.org_id, type: 'invoice.posted', data });
  if (settled.status === 'PAID')
    await emitDomainEvent(tx, { orgId: invoice.org_id, type: 'invoice.paid', data });
  return getInvoice(tx, invoice.org_id, invoice.id);
}

/** DRAFT or POSTED -> WITHDRAWN: no longer collectible, so it no longer makes its subscription past due. */
export async function withdrawInvoice(tx: Queryable, ref: InvoiceRef & { now?: Date }): Promise<Invoice> {
  const invoice = await lockInvoice(tx, ref);
  assertInvoiceTransition(invoice.invoice_number, invoice.status, 'WITHDRAWN');
  await tx.query(
    `UPDATE invoices SET status = 'WITHDRAWN', updated_at = now() WHERE org_id = $1 AND id = $2`,
    [invoice.org_id, invoice.id],
  );
  await restoreIfSettled(tx, utcDate(ref.now ?? new Date()), invoice.org_id, invoice.subscription_id);
  return getInvoice(tx, invoice.org_id, invoice.id);
}
