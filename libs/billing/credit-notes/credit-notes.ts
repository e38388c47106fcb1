import type { Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { readPage } from '../../list-pages/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import {
  type CreditNote,
  type CreditNoteReason,
  type InvoiceStatus,
  isUuid,
  type PaginationQuery,
} from '../../schemas/index.js';
import type { TaxComponentAmount } from './tax-reversal.js';

/**
 * Credit notes (docs/decisions.md, "Credit notes"): money given back against the lines of an
 * issued invoice. Issuing them is issue.ts; here, what they are and how they are read.
 */

/** The statuses a note may credit: issued, not withdrawn nor fully refunded. */
export const CREDITABLE_STATUSES: readonly InvoiceStatus[] = [
  'POSTED',
  'PARTIALLY_PAID',
  'PAID',
  'PARTIALLY_REFUNDED',
];

export interface CreditNoteRequest {
  invoiceId: string;
  /** The caller's organization; absent: the console, which names the invoice by id alone. */
  orgId?: number | undefined;
  input: unknown;
  /** The voided usage event a usage_correction note corrects. */
  usageEventId?: string | undefined;
}

export const CREDIT_NOTE_COLUMNS = `n.id, n.org_id, n.number, n.invoice_id, n.customer_id, n.currency, n.reason, n.memo,
  n.subtotal::text, n.tax_amount::text, n.total::text, n.tax_lines, n.applied_to_invoice::text,
  n.credited_to_customer::text, n.credit_grant_id, n.usage_event_id, n.created_at,
  (SELECT coalesce(json_agg(json_build_object('invoice_item_id', l.invoice_item_id, 'description', l.description,
            'amount', l.amount::text, 'tax_amount', l.tax_amount::text) ORDER BY l.position), '[]'::json)
     FROM credit_note_lines l WHERE l.credit_note_id = n.id) AS lines`;

export interface CreditNoteRow {
  id: string;
  org_id: number;
  number: string;
  invoice_id: string;
  customer_id: number;
  currency: string;
  reason: CreditNoteReason;
  memo: string | null;
  subtotal: string;
  tax_amount: string;
  total: string;
  tax_lines: TaxComponentAmount[];
  applied_to_invoice: string;
  credited_to_customer: string;
  credit_grant_id: string | null;
  usage_event_id: string | null;
  created_at: Date;
  lines: { invoice_item_id: number | string; description: string; amount: string; tax_amount: string }[];
}

const m = (text: string) => formatMoney(parseMoney(text));

export function toCreditNote(row: CreditNoteRow): CreditNote {
  return {
    id: row.id,
    object: 'credit_note',
    number: row.number,
    invoice_id: row.invoice_id,
    customer_id: Number(row.customer_id),
    currency: row.currency.trim(),
    reason: row.reason,
    memo: row.memo,
    lines: row.lines.map((line) => ({
      invoice_item_id: Number(line.invoice_item_id),
      description: line.description,
      amount: m(line.amount),
      tax_amount: m(line.tax_amount),
    })),
    subtotal: m(row.subtotal),
    tax: m(row.tax_amount),
    tax_lines: row.tax_lines.map((line) => ({ ...line, amount: m(line.amount) })),
    total: m(row.total),
    applied_to_invoice: m(row.applied_to_invoice),
    credited_to_customer: m(row.credited_to_customer),
    credit_grant_id: row.credit_grant_id,
    usage_event_id: row.usage_event_id,
    created_at: row.created_at.toISOString(),
  };
}

export async function getCreditNote(db: Queryable, orgId: number, id: string): Promise<CreditNote> {
  if (!isUuid(id)) throw ApiError.notFound(`Credit note ${id}`);
  const { rows } = await db.query<CreditNoteRow>(
    `SELECT ${CREDIT_NOTE_COLUMNS} FROM credit_notes n WHERE n.org_id = $1 AND n.id = $2`,
    [orgId, id],
  );
  if (!rows[0]) throw ApiError.notFound(`Credit note ${id}`);
  return toCreditNote(rows[0]);
}

export interface CreditNoteFilter {
  invoiceId?: string | undefined;
  customerId?: number | undefined;
}

/**
 * An organization's credit notes, newest first, of one invoice or one customer (or all). An
 * invoice or customer named but not the organization's is a 404. The notes of one group share
 * their created_at and list by number, highest first (number_seq, migration 025: CN-1000000 sorts
 * before CN-999999 as text).
 */
export async function listCreditNotes(
  db: Queryable,
  orgId: number,
  filter: CreditNoteFilter,
  page: PaginationQuery,
): Promise<{ data: CreditNote[]; total: number }> {
  if (filter.invoiceId !== undefined) {
    const found =
      isUuid(filter.invoiceId) &&
      (await db.query('SELECT 1 FROM invoices WHERE org_id = $1 AND id = $2', [orgId, filter.invoiceId]))
        .rowCount !== 0;
    if (!found) throw ApiError.notFound(`Invoice ${filter.invoiceId}`);
  }
  if (filter.customerId !== undefined) {
    const found = await db.query('SELECT 1 FROM customers WHERE org_id = $1 AND id = $2', [
      orgId,
      filter.customerId,
    ]);
    if (found.rowCount === 0) throw ApiError.notFound(`Customer ${filter.customerId}`);
  }
  const where = `org_id = $1 AND ($2::uuid IS NULL OR invoice_id = $2) AND ($3::bigint IS NULL OR customer_id = $3)`;
  const values = [orgId, filter.invoiceId ?? null, filter.customerId ?? null];
  const { rows, total } = await readPage<CreditNoteRow>(
    db,
    {
      table: 'credit_notes',
      alias: 'n',
      columns: `${CREDIT_NOTE_COLUMNS}, n.number_seq`,
      where,
      values,
      tieBreaker: 'number_seq',
      // an invoice or a customer has a handful of notes: counting them is an index range scan
      total: async () =>
        (
          await db.query<{ total: number }>(
            `SELECT count(*)::int AS total FROM credit_notes WHERE ${where}`,
            values,
          )
        ).rows[0]!.total,
    },
    page,
  );
  return { data: rows.map(toCreditNote), total: await total };
}

export interface CreditNoteSummary {
  id: string;
  number: string;
  /** YYYY-MM-DD (UTC). */
  date: string;
  total: string;
}

/** An invoice's credit notes, oldest first, as its documents list them. */
export async function creditNoteSummaries(
  db: Queryable,
  orgId: number,
  invoiceId: string,
): Promise<CreditNoteSummary[]> {
  if (!isUuid(invoiceId)) return [];
  const { rows } = await db.query<{ id: string; number: string; date: string; total: string }>(
    `SELECT id, number, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date, total::text
       FROM credit_notes WHERE org_id = $1 AND invoice_id = $2 ORDER BY created_at, number_seq`,
    [orgId, invoiceId],
  );
  return rows.map((row) => ({ ...row, total: m(row.total) }));
}
