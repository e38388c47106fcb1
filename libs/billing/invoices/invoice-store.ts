import type { Queryable } from '../../db/index.js';
import type { InvoiceStatus } from '../../schemas/index.js';
import type { BilledTerms } from './billable-items.js';
import type { InvoiceLine } from './invoice-lines.js';

/** Writing invoices: numbers reserved per organization, invoices and their lines inserted. */

/**
 * Reserves `count` consecutive invoice numbers of an organization. The row stays locked until the
 * batch commits, so numbers are gapless per organization and never handed out twice.
 */
export async function reserveInvoiceNumbers(
  tx: Queryable,
  orgId: number,
  count: number,
): Promise<{ first: number; paymentTermsDays: number; creditCurrency: string; graceHours: number }> {
  const { rows } = await tx.query<{
    last: number;
    payment_terms_days: number;
    default_currency: string;
    invoice_grace_hours: number;
  }>(
    `UPDATE organizations SET invoice_number_seq = invoice_number_seq + $2 WHERE id = $1
     RETURNING invoice_number_seq AS last, payment_terms_days, default_currency, invoice_grace_hours`,
    [orgId, count],
  );
  const row = rows[0];
  if (!row) throw new Error(`organization ${orgId} disappeared during a billing run`);
  return {
    first: row.last - count + 1,
    paymentTermsDays: row.payment_terms_days,
    creditCurrency: row.default_currency.trim(),
    graceHours: row.invoice_grace_hours,
  };
}

export function formatInvoiceNumber(sequence: number): string {
  return `INV-${String(sequence).padStart(6, '0')}`;
}

export interface NewInvoice {
  id: string;
  org_id: number;
  invoice_number: string;
  customer_id: number;
  /** null for a Prepaid credits invoice. */
  subscription_id: number | null;
  invoice_date: string;
  period_start: string;
  period_end: string;
  due_date: string;
  status: InvoiceStatus;
  subtotal: string;
  tax_amount: string;
  total: string;
  amount_paid: string;
  currency: string;
  posted: boolean;
  lines: StoredInvoiceLine[];
  /** A period's invoice: the instants of its period and whether it is the first paid one. */
  billed_from?: string | null;
  billed_until?: string | null;
  first_period?: boolean | null;
  /** A grace draft: when the scheduler posts it. */
  post_at?: string | null;
  /** A DRAFT period invoice: the terms it billed its items at. */
  billed_terms?: BilledTerms | null;
}

/** A line as stored: a Prepaid credits line sells no product of no subscription item. */
export type StoredInvoiceLine = Omit<InvoiceLine, 'product_id' | 'subscription_item_id'> & {
  product_id: number | null;
  subscription_item_id: number | null;
};

export async function insertInvoices(tx: Queryable, invoices: readonly NewInvoice[]): Promise<void> {
  if (invoices.length === 0) return;
  await tx.query(
    `INSERT INTO invoices (id, org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start,
       period_end, due_date, status, subtotal, tax_amount, total, amount_paid, currency, posted_at, billed_from,
       billed_until, first_period, post_at, billed_terms)
     SELECT id, org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start, period_end,
            due_date, status, subtotal, tax_amount, total, amount_paid, currency, CASE WHEN posted THEN now() END,
            billed_from, billed_until, first_period, post_at, billed_terms
       FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, org_id bigint, invoice_number text, customer_id bigint,
            subscription_id bigint, invoice_date date, period_start date, period_end date, due_date date,
            status text, subtotal numeric, tax_amount numeric, total numeric, amount_paid numeric,
            currency text, posted boolean, billed_from timestamptz, billed_until timestamptz,
            first_period boolean, post_at timestamptz, billed_terms jsonb)`,
    [JSON.stringify(invoices.map(({ lines: _lines, ...invoice }) => invoice))],
  );
  await insertInvoiceLines(tx, invoices);
}

/** The lines of invoices (written with them, or again when a draft is re-rated). */
export async function insertInvoiceLines(
  tx: Queryable,
  invoices: readonly Pick<NewInvoice, 'id' | 'org_id' | 'lines'>[],
): Promise<void> {
  const items = invoices.flatMap((invoice) =>
    invoice.lines.map((line, position) => ({
      ...line,
      org_id: invoice.org_id,
      invoice_id: invoice.id,
      position,
    })),
  );
  if (items.length === 0) return;
  await tx.query(
    `INSERT INTO invoice_items (org_id, invoice_id, position, product_id, subscription_item_id, description,
       quantity, unit_price, line_total_pre_tax, tax_amount, tax_type)
     SELECT org_id, invoice_id, position, product_id, subscription_item_id, description, quantity, unit_price,
            line_total_pre_tax, tax_amount, tax_type
       FROM jsonb_to_recordset($1::jsonb) AS x(org_id bigint, invoice_id uuid, position integer, product_id bigint,
            subscription_item_id bigint, description text, quantity numeric, unit_price numeric,
            line_total_pre_tax numeric, tax_amount numeric, tax_type text)`,
    [JSON.stringify(items)],
  );
}
