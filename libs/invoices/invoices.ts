import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import type { Invoice, InvoiceItem, InvoiceStatus, PaginationQuery } from '../schemas/index.js';

// balance is derived (total - amount_paid; refunds are not subtracted), never stored
const COLUMNS = `id, invoice_number, customer_id, subscription_id, invoice_date, period_start, period_end, due_date,
  status, total, amount_paid, amount_refunded, (total - amount_paid)::numeric(20, 8) AS balance, tax_amount,
  currency, created_at, updated_at`;

type InvoiceRow = Omit<Invoice, 'object' | 'items' | 'created_at' | 'updated_at'> & {
  created_at: Date;
  updated_at: Date;
};
type ItemRow = InvoiceItem & { invoice_id: string };

function toInvoice(row: InvoiceRow, items: InvoiceItem[]): Invoice {
  return {
    object: 'invoice',
    ...row,
    items,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Items of many invoices in one query, in their printed order. */
async function itemsByInvoice(
  db: Queryable,
  orgId: number,
  invoiceIds: string[],
): Promise<Map<string, InvoiceItem[]>> {
  const grouped = new Map<string, InvoiceItem[]>(invoiceIds.map((id) => [id, []]));
  if (invoiceIds.length === 0) return grouped;
  const { rows } = await db.query<ItemRow>(
    `SELECT invoice_id, id, product_id, description, quantity, unit_price, line_total_pre_tax, tax_amount, tax_type
       FROM invoice_items
      WHERE org_id = $1 AND invoice_id = ANY($2::uuid[])
      ORDER BY invoice_id, position, id`,
    [orgId, invoiceIds],
  );
  for (const { invoice_id, ...item } of rows) grouped.get(invoice_id)?.push(item);
  return grouped;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function getInvoice(db: Queryable, orgId: number, invoiceId: string): Promise<Invoice> {
  if (!UUID.test(invoiceId)) throw ApiError.notFound(`Invoice ${invoiceId}`);
  const { rows } = await db.query<InvoiceRow>(
    `SELECT ${COLUMNS} FROM invoices WHERE org_id = $1 AND id = $2`,
    [orgId, invoiceId],
  );
  if (!rows[0]) throw ApiError.notFound(`Invoice ${invoiceId}`);
  const items = await itemsByInvoice(db, orgId, [invoiceId]);
  return toInvoice(rows[0], items.get(invoiceId) ?? []);
}

export interface InvoiceFilter {
  customerId?: number | undefined;
  status?: InvoiceStatus | undefined;
}

export async function listInvoices(
  db: Queryable,
  orgId: number,
  filter: InvoiceFilter,
  page: PaginationQuery,
): Promise<{ data: Invoice[]; total: number }> {
  const conditions = ['org_id = $1'];
  const values: unknown[] = [orgId];
  if (filter.customerId !== undefined) {
    values.push(filter.customerId);
    conditions.push(`customer_id = $${values.length}`);
  }
  if (filter.status !== undefined) {
    values.push(filter.status);
    conditions.push(`status = $${values.length}`);
  }
  const where = conditions.join(' AND ');
  const [list, count] = await Promise.all([
    db.query<InvoiceRow>(
      `SELECT ${COLUMNS} FROM invoices WHERE ${where} ORDER BY created_at DESC, id DESC
        LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      [...values, page.limit, page.offset],
    ),
    db.query<{ total: number }>(`SELECT count(*) AS total FROM invoices WHERE ${where}`, values),
  ]);
  const items = await itemsByInvoice(
    db,
    orgId,
    list.rows.map((r) => r.id),
  );
  return {
    data: list.rows.map((row) => toInvoice(row, items.get(row.id) ?? [])),
    total: count.rows[0]!.total,
  };
}
