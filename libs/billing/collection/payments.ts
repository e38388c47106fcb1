import type { Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { emitDomainEvent } from '../../events/index.js';
import { getInvoice, TRANSACTION_COLUMNS, toInvoiceTransaction } from '../../invoices/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import type {
  InvoiceRecord as Invoice,
  InvoiceTransaction,
  TransactionMethod,
  TransactionType,
} from '../../schemas/index.js';
import {
  assertInvoiceTransition,
  invoiceEventData,
  parseAmount,
  paymentEventData,
  utcDate,
} from '../domain/index.js';
import { activateGrantSoldBy } from './credit-grants.js';
import { restoreIfSettled } from './dunning.js';
import { type InvoiceRef, type LockedInvoice, lockInvoice } from './invoice-operations.js';
import {
  assertPayableAmount,
  type CollectibleStatus,
  isPayable,
  PAYABLE_STATUSES,
  statusAfterRefund,
  statusForAmountPaid,
} from './settlement.js';

/**
 * Money against an invoice (docs/architecture.md, "Rules of the contract"): payments and credit memos raise `amount_paid` (so lower
 * the balance) and move POSTED -> PARTIALLY_PAID -> PAID, a refunded invoice with a balance left
 * too; refunds raise `amount_refunded` and move a paid invoice to PARTIALLY_REFUNDED or REFUNDED.
 * Each writes one invoice_transaction and its events in the caller's transaction, after locking
 * the invoice.
 */

export interface MoneyInput extends InvoiceRef {
  amount: string;
  method?: TransactionMethod | undefined;
  reference?: string | null | undefined;
  note?: string | null | undefined;
  /** When it happens, for the overdue check of the subscription (default: now). */
  now?: Date | undefined;
}

export interface MoneyResult {
  transaction: InvoiceTransaction;
  invoice: Invoice;
}

/** A completed PAYMENT; emits payment.succeeded, and invoice.paid when it settles the invoice. */
export function recordPayment(tx: Queryable, input: MoneyInput): Promise<MoneyResult> {
  return collect(tx, 'PAYMENT', input);
}

/** A CREDIT_MEMO lowers what is owed like a payment, without money changing hands (no payment event). */
export function createCreditMemo(tx: Queryable, input: Omit<MoneyInput, 'method'>): Promise<MoneyResult> {
  return collect(tx, 'CREDIT_MEMO', { ...input, method: 'EXTERNAL' });
}

/**
 * What a CREDIT_MEMO of `amount` does to an invoice the caller holds, checked as createCreditMemo
 * checks it (409 unless payable with a balance, 422 beyond it or below the minor unit), for a caller
 * that writes the memo in a statement of its own (a credit note): the transaction row, then
 * `amount_paid` and `status` as returned, `invoice.paid` when `status` is PAID, and restoreIfSettled.
 */
export function planCreditMemo(
  invoice: LockedInvoice,
  amount: bigint,
): { status: CollectibleStatus; amountPaid: string } {
  return checkCollectible(invoice, 'CREDIT_MEMO', amount);
}

/** The checks and the outcome of money applied to an invoice (collect, planCreditMemo). */
function checkCollectible(
  invoice: LockedInvoice,
  type: 'PAYMENT' | 'CREDIT_MEMO',
  amount: bigint,
): { status: CollectibleStatus; amountPaid: string } {
  const what = type === 'PAYMENT' ? 'A payment' : 'A credit memo';
  const total = parseMoney(invoice.total);
  const paid = parseMoney(invoice.amount_paid);
  const balance = total - paid;
  if (!isPayable(invoice.status, balance)) {
    throw ApiError.conflict(
      `Invoice ${invoice.invoice_number} is ${invoice.status}` +
        (PAYABLE_STATUSES.includes(invoice.status) ? ' with no balance left' : '') +
        `: ${what.toLowerCase()} can only be applied to a POSTED or PARTIALLY_PAID invoice, or a refunded one with a balance left` +
        (invoice.status === 'DRAFT' ? ' (post it first).' : '.'),
    );
  }
  if (amount > balance) {
    throw ApiError.validation(
      [
        {
          field: 'amount',
          message: `Exceeds the balance of invoice ${invoice.invoice_number} (${formatMoney(balance)} ${invoice.currency}).`,
          code: 'out_of_range',
        },
      ],
      `${what} of ${formatMoney(amount)} exceeds the balance of ${formatMoney(balance)} ${invoice.currency}.`,
    );
  }
  assertPayableAmount('amount', amount, invoice.currency, balance);
  const status = statusForAmountPaid(total, paid + amount);
  assertInvoiceTransition(invoice.invoice_number, invoice.status, status);
  return { status, amountPaid: formatMoney(paid + amount) };
}

async function collect(
  tx: Queryable,
  type: 'PAYMENT' | 'CREDIT_MEMO',
  input: MoneyInput,
): Promise<MoneyResult> {
  const amount = parseAmount('amount', input.amount);
  const invoice = await lockInvoice(tx, input);
  const repeated = await recordedBefore(tx, invoice, type, amount, input);
  if (repeated) return repeated;
  const { status, amountPaid } = checkCollectible(invoice, type, amount);
  const transaction = await insertTransaction(tx, invoice, type, amount, input);
  await tx.query(
    'UPDATE invoices SET amount_paid = $3, status = $4, updated_at = now() WHERE org_id = $1 AND id = $2',
    [invoice.org_id, invoice.id, amountPaid, status],
  );
  if (type === 'PAYMENT') {
    await emitDomainEvent(tx, {
      orgId: invoice.org_id,
      type: 'payment.succeeded',
      data: paymentEventData(transaction, invoice.customer_id),
    });
  }
  // the move to PAID happens once per invoice: the balance only shrinks (refunds leave it alone),
  // so once it is 0 no payment is taken again
  if (status === 'PAID') {
    await activateGrantSoldBy(tx, invoice);
    await emitDomainEvent(tx, {
      orgId: invoice.org_id,
      type: 'invoice.paid',
      data: invoiceEventData({ ...invoice, status, amount_paid: amountPaid }),
    });
  }
  await restoreIfSettled(tx, utcDate(input.now ?? new Date()), invoice.org_id, invoice.subscription_id);
  return { transaction, invoice: await getInvoice(tx, invoice.org_id, invoice.id) };
}

const REFUNDABLE = ['PAID', 'PARTIALLY_PAID', 'PARTIALLY_REFUNDED'];

/**
 * A REFUND (the spec's legacy type) gives back part of what was paid by PAYMENT transactions (a
 * credit memo moved no money, so there is nothing to give back). The balance is unchanged: the
 * spec does not subtract refunds from it.
 */
export async function createRefund(tx: Queryable, input: MoneyInput): Promise<MoneyResult> {
  const amount = parseAmount('amount', input.amount);
  const invoice = await lockInvoice(tx, input);
  const repeated = await recordedBefore(tx, invoice, 'REFUND', amount, input);
  if (repeated) return repeated;
  if (!REFUNDABLE.includes(invoice.status)) {
    throw ApiError.conflict(
      `Invoice ${invoice.invoice_number} is ${invoice.status}: only a PAID, PARTIALLY_PAID or PARTIALLY_REFUNDED invoice can be refunded.`,
    );
  }
  const { rows } = await tx.query<{ paid: string }>(
    `SELECT COALESCE(sum(amount), 0)::numeric(20, 8) AS paid FROM invoice_transactions
      WHERE org_id = $1 AND invoice_id = $2 AND type = 'PAYMENT' AND status = 'COMPLETED'`,
    [invoice.org_id, invoice.id],
  );
  const refunded = parseMoney(invoice.amount_refunded);
  const refundable = parseMoney(rows[0]!.paid) - refunded;
  if (refundable <= 0n) {
    throw ApiError.conflict(
      `Invoice ${invoice.invoice_number} has nothing left to refund: its payments were refunded already, or it was settled by credit memos.`,
    );
  }
  if (amount > refundable) {
    throw ApiError.validation(
      [
        {
          field: 'amount',
          message: `Exceeds what can still be refunded on invoice ${invoice.invoice_number} (${formatMoney(refundable)} ${invoice.currency}).`,
          code: 'out_of_range',
        },
      ],
      `A refund of ${formatMoney(amount)} exceeds the refundable ${formatMoney(refundable)} ${invoice.currency}.`,
    );
  }
  assertPayableAmount('amount', amount, invoice.currency, refundable);
  const status = statusAfterRefund(refundable - amount);
  assertInvoiceTransition(invoice.invoice_number, invoice.status, status);
  const transaction = await insertTransaction(tx, invoice, 'REFUND', amount, input);
  await tx.query(
    'UPDATE invoices SET amount_refunded = $3, status = $4, updated_at = now() WHERE org_id = $1 AND id = $2',
    [invoice.org_id, invoice.id, formatMoney(refunded + amount), status],
  );
  return { transaction, invoice: await getInvoice(tx, invoice.org_id, invoice.id) };
}

/**
 * A reference names one payment (a processor's charge id, a bank reference): a command repeated
 * with it, say by a script retrying after a timeout, finds the transaction it recorded and records
 * nothing new. The same reference with another amount or method is a 409, not a second one.
 * Looked up under the invoice's lock, so two concurrent repeats cannot both insert.
 */
async function recordedBefore(
  tx: Queryable,
  invoice: LockedInvoice,
  type: TransactionType,
  amount: bigint,
  input: MoneyInput,
): Promise<MoneyResult | undefined> {
  if (!input.reference) return undefined;
  const { rows } = await tx.query<Parameters<typeof toInvoiceTransaction>[0]>(
    `SELECT ${TRANSACTION_COLUMNS} FROM invoice_transactions
      WHERE org_id = $1 AND invoice_id = $2 AND type = $3 AND reference = $4
      ORDER BY created_at LIMIT 1`,
    [invoice.org_id, invoice.id, type, input.reference],
  );
  if (!rows[0]) return undefined;
  const transaction = toInvoiceTransaction(rows[0]);
  const method = input.method ?? 'EXTERNAL';
  if (parseMoney(transaction.amount) !== amount || transaction.method !== method) {
    throw ApiError.conflict(
      `Invoice ${invoice.invoice_number} already has a ${type} with reference ${input.reference} ` +
        `(${transaction.amount} ${invoice.currency}, ${transaction.method}); give another reference for another one.`,
    );
  }
  return { transaction, invoice: await getInvoice(tx, invoice.org_id, invoice.id) };
}

async function insertTransaction(
  tx: Queryable,
  invoice: LockedInvoice,
  type: TransactionType,
  amount: bigint,
  input: MoneyInput,
): Promise<InvoiceTransaction> {
  const { rows } = await tx.query<Parameters<typeof toInvoiceTransaction>[0]>(
    `INSERT INTO invoice_transactions (org_id, invoice_id, type, amount, method, status, reference, note)
     VALUES ($1, $2, $3, $4, $5, 'COMPLETED', $6, $7)
     RETURNING ${TRANSACTION_COLUMNS}`,
    [
      invoice.org_id,
      invoice.id,
      type,
      formatMoney(amount),
      input.method ?? 'EXTERNAL',
      input.reference ?? null,
      input.note ?? null,
    ],
  );
  return toInvoiceTransaction(rows[0]!);
}
