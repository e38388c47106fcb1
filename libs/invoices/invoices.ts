import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { type ListSource, type ListTotalReader, listTotal, readPage } from '../list-pages/index.js';
import {
  type Invoice,
  type InvoiceItem,
  type InvoiceRecord,
  type InvoiceStatus,
  isUuid,
  type PaginationQuery,
} from '../schemas/index.js';
import { hostedInvoiceUrl } from './hosted-link.js';

// balance is derived (total - amount_paid; refunds are not subtracted), never stored
const COLUMNS = `i.id, i.invoice_number, i.customer_id, i.subscription_id, i.invoice_date, i.period_start,
  i.period_end, i.due_date, i.status, i.total, i.amount_paid, i.amount_refunded,
  (i.total - i.amount_paid)::numeric(20, 8) AS balance, i.tax_amount, i.currency, i.created_at, i.updated_at`;

type InvoiceRow = Omit<InvoiceRecord, 'object' | 'items' | 'created_at' | 'updated_at'> & {
  created_at: Date;
  updated_at: Date;
};
type ItemRow = InvoiceItem & { invoice_id: string };

function toInvoice(row: InvoiceRow, items: InvoiceItem[]): InvoiceRecord {
  return {
    object: 'invoice',
    ...row,
    items,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * Items of many invoices in one query, in their printed order, keyed by the invoice id as the
 * database spells it: look them up by the invoice row's own id, never by an id as it was given.
 */
async function itemsByInvoice(
  db: Queryable,
  orgId: number,
  invoiceIds: string[],
): Promise<Map<string, InvoiceItem[]>> {
  const grouped = new Map<string, InvoiceItem[]>();
  if (invoiceIds.length === 0) return grouped;
  const { rows } = await db.query<ItemRow>(
    `SELECT invoice_id, id, product_id, description, quantity, unit_price, line_total_pre_tax, tax_amount, tax_type
       FROM invoice_items
      WHERE org_id = $1 AND invoice_id = ANY($2::uuid[])
      ORDER BY invoice_id, position, id`,
    [orgId, invoiceIds],
  );
  for (const { invoice_id, ...item } of rows) {
    const items = grouped.get(invoice_id);
    if (items) items.push(item);
    else grouped.set(invoice_id, [item]);
  }
  return grouped;
}

/** A text id that is not a UUID is simply not found (docs/decisions.md). */
export async function getInvoice(db: Queryable, orgId: number, invoiceId: string): Promise<InvoiceRecord> {
  if (!isUuid(invoiceId)) throw ApiError.notFound(`Invoice ${invoiceId}`);
  const [invoice, items] = await Promise.all([
    db.query<InvoiceRow>(`SELECT ${COLUMNS} FROM invoices i WHERE i.org_id = $1 AND i.id = $2`, [
      orgId,
      invoiceId,
    ]),
    itemsByInvoice(db, orgId, [invoiceId]),
  ]);
  const row = invoice.rows[0];
  if (!row) throw ApiError.notFound(`Invoice ${invoiceId}`);
  return toInvoice(row, items.get(row.id) ?? []);
}

export interface InvoiceFilter {
  customerId?: number | undefined;
  status?: InvoiceStatus | undefined;
}

/**
 * The list of an organization's invoices under `filter`, newest first; each filter combination
 * has its (org_id, ..., created_at, id) index. `columns` is what a row of a page holds; `totals`,
 * when given, reads the list's total (through the pool) instead of listTotal.
 */
export function invoiceList(
  db: Queryable,
  orgId: number,
  filter: InvoiceFilter,
  columns: string,
  totals?: ListTotalReader,
): ListSource {
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
  return {
    table: 'invoices',
    alias: 'i',
    columns,
    where: conditions.join(' AND '),
    values,
    total: () => {
      const key = { orgId, list: 'invoices' as const, ...filter };
      return totals ? totals.total(key) : listTotal(db, key);
    },
  };
}

/** Newest first (see libs/list-pages for how a page is read); the page's items come in one more query. */
export async function listInvoices(
  db: Queryable,
  orgId: number,
  filter: InvoiceFilter,
  page: PaginationQuery,
): Promise<{ data: InvoiceRecord[]; total: number }> {
  const { rows, total } = await readPage<InvoiceRow>(db, invoiceList(db, orgId, filter, COLUMNS), page);
  const [items, count] = await Promise.all([
    itemsByInvoice(
      db,
      orgId,
      rows.map((r) => r.id),
    ),
    total,
  ]);
  return { data: rows.map((row) => toInvoice(row, items.get(row.id) ?? [])), total: count };
}

/**
 * The organization's invoices among `ids` (any order; unknown ids are left out), with the version
 * each was read at. Run it in one snapshot (a repeatable-read transaction) so that an invoice's
 * items are those of its version.
 */
export async function invoicesWithVersions(
  tx: Queryable,
  orgId: number,
  ids: string[],
): Promise<{ invoice: InvoiceRecord; version: number }[]> {
  const invoices = await tx.query<InvoiceRow & { version: number }>(
    `SELECT ${COLUMNS}, i.version FROM invoices i WHERE i.org_id = $1 AND i.id = ANY($2::uuid[])`,
    [orgId, ids],
  );
  const items = await itemsByInvoice(tx, orgId, ids);
  return invoices.rows.map(({ version, ...row }) => ({
    invoice: toInvoice(row, items.get(row.id) ?? []),
    version,
  }));
}

/**
 * How an organization's hosted links are signed: its key (migration 010) and, per invoice, the
 * link generation (migration 013; invoices not listed are at 0, as nearly all are).
 */
export interface HostedLinks {
  key: Buffer;
  generations: ReadonlyMap<string, number>;
}

/** The organization's hosted link signing for `invoiceIds`; read it in the snapshot the invoices are read in. */
export async function hostedLinksOf(
  db: Queryable,
  orgId: number,
  invoiceIds: string[],
): Promise<HostedLinks> {
  const { rows } = await db.query<{
    hosted_link_key: Buffer;
    invoice_id: string | null;
    hosted_link_generation: number | null;
  }>(
    `SELECT o.hosted_link_key, i.id AS invoice_id, i.hosted_link_generation
       FROM organizations o
       LEFT JOIN invoices i ON i.org_id = o.id AND i.id = ANY($2::uuid[]) AND i.hosted_link_generation > 0
      WHERE o.id = $1`,
    [orgId, invoiceIds],
  );
  if (!rows[0]) throw ApiError.notFound(`Organization ${orgId}`);
  const generations = new Map<string, number>();
  for (const row of rows) {
    if (row.invoice_id !== null) generations.set(row.invoice_id, row.hosted_link_generation!);
  }
  return { key: rows[0].hosted_link_key, generations };
}

/** The public invoice: the record with its hosted page's link under `baseUrl`. */
export function toPublicInvoice(record: InvoiceRecord, baseUrl: string, links: HostedLinks): Invoice {
  const generation = links.generations.get(record.id) ?? 0;
  return { ...record, hosted_url: hostedInvoiceUrl(baseUrl, record.id, { key: links.key, generation }) };
}

/** GET /invoices/{id}: the invoice as the public API shows it, links under `baseUrl`. */
export async function getPublicInvoice(
  db: Queryable,
  orgId: number,
  invoiceId: string,
  baseUrl: string,
): Promise<Invoice> {
  const [record, links] = await Promise.all([
    getInvoice(db, orgId, invoiceId),
    hostedLinksOf(db, orgId, isUuid(invoiceId) ? [invoiceId] : []),
  ]);
  return toPublicInvoice(record, baseUrl, links);
}

/**
 * A new hosted link for the invoice: every earlier one stops opening it (its signature no longer
 * checks out) and hosted_url is the new one. The organization's other links are untouched.
 */
export async function rotateHostedLink(
  db: Queryable,
  orgId: number,
  invoiceId: string,
  baseUrl: string,
): Promise<Invoice> {
  if (!isUuid(invoiceId)) throw ApiError.notFound(`Invoice ${invoiceId}`);
  const { rows } = await db.query<{ id: string }>(
    `UPDATE invoices SET hosted_link_generation = hosted_link_generation + 1, updated_at = now()
      WHERE org_id = $1 AND id = $2 RETURNING id`,
    [orgId, invoiceId],
  );
  if (!rows[0]) throw ApiError.notFound(`Invoice ${invoiceId}`);
  return getPublicInvoice(db, orgId, rows[0].id, baseUrl);
}
