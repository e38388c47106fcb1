import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { totalImpliedByPage } from '../list-pages/index.js';
import { type InvoiceTransaction, isUuid, type PaginationQuery } from '../schemas/index.js';

type TransactionRow = Omit<InvoiceTransaction, 'object' | 'created_at'> & { created_at: Date };

export function toInvoiceTransaction(row: TransactionRow): InvoiceTransaction {
  return { object: 'invoice_transaction', ...row, created_at: row.created_at.toISOString() };
}

export const TRANSACTION_COLUMNS =
  'id, invoice_id, type, amount, method, status, reference, note, credit_grant_id, created_at';

/**
 * The financial timeline behind an invoice's balance, newest first; 404 when the invoice is not
 * the caller's (or the id is not a UUID, which no invoice has).
 */
export async function listInvoiceTransactions(
  db: Queryable,
  orgId: number,
  invoiceId: string,
  page: PaginationQuery,
): Promise<{ data: InvoiceTransaction[]; total: number }> {
  if (!isUuid(invoiceId)) throw ApiError.notFound(`Invoice ${invoiceId}`);
  const [exists, list] = await Promise.all([
    db.query('SELECT 1 FROM invoices WHERE org_id = $1 AND id = $2', [orgId, invoiceId]),
    db.query<TransactionRow>(
      `SELECT ${TRANSACTION_COLUMNS} FROM invoice_transactions WHERE org_id = $1 AND invoice_id = $2
        ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
      [orgId, invoiceId, page.limit, page.offset],
    ),
  ]);
  if (exists.rowCount === 0) throw ApiError.notFound(`Invoice ${invoiceId}`);
  const total =
    totalImpliedByPage(page, list.rows.length) ??
    (
      await db.query<{ total: number }>(
        'SELECT count(*) AS total FROM invoice_transactions WHERE org_id = $1 AND invoice_id = $2',
        [orgId, invoiceId],
      )
    ).rows[0]!.total;
  return { data: list.rows.map(toInvoiceTransaction), total };
}
