import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../db/index.js';
import { ApiError, type FieldError } from '../../errors/index.js';
import { type DomainEvent, wakeDispatcherAfterCommit } from '../../events/index.js';
import { readPage } from '../../list-pages/index.js';
import { formatMoney, isInMinorUnits, knownMinorUnitDigits, parseMoney } from '../../money/index.js';
import {
  CreateCreditNote,
  type CreditNote,
  type CreditNoteReason,
  type InvoiceStatus,
  isUuid,
  type PaginationQuery,
  type TaxType,
} from '../../schemas/index.js';
import { type LockedInvoice, lockInvoice, planCreditMemo, restoreIfSettled } from '../collection/index.js';
import { insertGrant, lockCreditCustomer, toCreditGrant } from '../credits/index.js';
import { invoiceEventData, parseInput, utcDate } from '../domain/index.js';
import { shareOut } from '../invoices/index.js';
import { type TaxRule, taxRuleFor } from '../tax/index.js';
import { invoiceTaxComponents, noteTax, type TaxComponentAmount } from './tax-reversal.js';

/**
 * Credit notes (docs/decisions.md, "Credit notes"): money given back against the lines of an
 * issued invoice. The invoice is locked first, so two notes of one invoice apply one after the
 * other and the second sees what the first credited; the note's number comes from the
 * organization's counter row, bumped in the same transaction (gapless: a rollback gives it back).
 */

/** The statuses a note may credit: issued, not withdrawn nor fully refunded. */
export const CREDITABLE_STATUSES: readonly InvoiceStatus[] = [
  'POSTED',
  'PARTIALLY_PAID',
  'PAID',
  'PARTIALLY_REFUNDED',
];
/** The statuses in which a CREDIT_MEMO may still lower the balance (collection's payable ones). */
const MEMO_STATUSES: readonly InvoiceStatus[] = ['POSTED', 'PARTIALLY_PAID', 'PARTIALLY_REFUNDED'];

export interface CreditNoteRequest {
  invoiceId: string;
  /** The caller's organization; absent: the console, which names the invoice by id alone. */
  orgId?: number | undefined;
  input: unknown;
  /** The voided usage event a usage_correction note corrects. */
  usageEventId?: string | undefined;
}

interface ItemRow {
  id: number;
  description: string;
  line_total_pre_tax: string;
  tax_type: TaxType | null;
  credited: string;
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

/**
 * Issues a credit note. 404 for an invoice of another organization; 409 unless the invoice is
 * POSTED, PARTIALLY_PAID, PAID or PARTIALLY_REFUNDED; 422 per field for bad lines, a line
 * credited beyond its amount (earlier notes counted) included.
 */
export async function createCreditNote(tx: Queryable, request: CreditNoteRequest): Promise<CreditNote> {
  const input = parseInput(CreateCreditNote, request.input);
  const invoice = await lockInvoice(tx, { invoiceId: request.invoiceId, orgId: request.orgId });
  if (!CREDITABLE_STATUSES.includes(invoice.status)) {
    throw ApiError.conflict(
      `Invoice ${invoice.invoice_number} is ${invoice.status}: only a POSTED, PARTIALLY_PAID, PAID or PARTIALLY_REFUNDED invoice can be credited.`,
    );
  }
  if (invoice.subscription_id === null) {
    throw ApiError.conflict(
      `Invoice ${invoice.invoice_number} sells prepaid credits: void its credit grant instead of crediting it.`,
    );
  }
  const facts = await invoiceFacts(tx, invoice);
  const items = facts.items;
  const lines = checkLines(invoice, items, input.lines);
  const subtotal = lines.reduce((sum, line) => sum + line.amount, 0n);
  // a credit line of the invoice (a proration credit) lowers its subtotal below the sum of its
  // other lines: the notes together never credit more than the subtotal, so never more than the total
  const creditedBefore = facts.earlier.reduce((sum, note) => sum + parseMoney(note.subtotal), 0n);
  const invoiceSubtotal = parseMoney(facts.subtotal);
  if (creditedBefore + subtotal > invoiceSubtotal) {
    const left = invoiceSubtotal - creditedBefore > 0n ? invoiceSubtotal - creditedBefore : 0n;
    throw ApiError.validation([
      {
        field: 'lines',
        message: `Exceeds what is left to credit on invoice ${invoice.invoice_number} before tax (${formatMoney(left)} ${invoice.currency} of its subtotal ${formatMoney(invoiceSubtotal)}).`,
        code: 'out_of_range',
      },
    ]);
  }

  const tax = reverseTax(invoice, facts, subtotal);
  const shares = shareOut(
    tax.amount,
    lines.map((line) => line.amount),
    invoice.currency,
  );
  const total = subtotal + tax.amount;
  const balance = parseMoney(invoice.total) - parseMoney(invoice.amount_paid);
  const applied =
    MEMO_STATUSES.includes(invoice.status) && balance > 0n ? (total < balance ? total : balance) : 0n;
  const credited = total - applied;

  // The organization's counter is bumped in the note's own statement, the last before the commit:
  // the counter row, which every note of the organization takes, is held only that long. The same
  // statement writes the credit memo (as collection plans it), the lines and the events, and names
  // the grant after the note; each statement saved is a round trip and a write on the api and
  // Postgres (bench/RESULTS.md, "Credit notes").
  const noteId = randomUUID();
  // the memo is checked as collection checks any credit memo, and written in the last statement
  const memo = applied > 0n ? planCreditMemo(invoice, applied) : undefined;
  const events: { type: DomainEvent['type']; data: Record<string, unknown> }[] = [];
  // the move to PAID happens once per invoice, as in collection (payments.ts)
  if (memo?.status === 'PAID') {
    events.push({
      type: 'invoice.paid',
      data: invoiceEventData({ ...invoice, status: memo.status, amount_paid: memo.amountPaid }),
    });
  }
  let grantId: string | null = null;
  if (credited > 0n) {
    await lockCreditCustomer(tx, invoice.customer_id, invoice.org_id);
    const grant = await insertGrant(tx, {
      org_id: invoice.org_id,
      customer_id: invoice.customer_id,
      name: 'Credit note',
      category: 'promotional',
      currency: invoice.currency,
      amount: credited,
      priority: 50,
      applies_to: 'all',
      effective_at: null,
      expires_at: null,
      status: 'ACTIVE',
      invoice_id: null,
      reference: null,
      source: 'credit_note',
    });
    grantId = grant.id;
    events.push({ type: 'credit_grant.created', data: toCreditGrant(grant) });
  }
  const lineAmounts = lines.map((line) => formatMoney(line.amount));
  const lineTaxes = shares.map((share) => formatMoney(share));
  const draft: Omit<CreditNote, 'number' | 'created_at'> = {
    id: noteId,
    object: 'credit_note',
    invoice_id: invoice.id,
    customer_id: Number(invoice.customer_id),
    currency: invoice.currency,
    reason: input.reason,
    memo: input.memo ?? null,
    lines: lines.map((line, index) => ({
      invoice_item_id: Number(line.item.id),
      description: line.item.description,
      amount: lineAmounts[index]!,
      tax_amount: lineTaxes[index]!,
    })),
    subtotal: formatMoney(subtotal),
    tax: formatMoney(tax.amount),
    tax_lines: tax.lines,
    total: formatMoney(total),
    applied_to_invoice: formatMoney(applied),
    credited_to_customer: formatMoney(credited),
    credit_grant_id: grantId,
    usage_event_id: request.usageEventId ?? null,
  };
  events.push({ type: 'credit_note.created', data: draft });
  const { rows } = await tx.query<{ number: string; created_at: Date }>(
    `WITH counter AS (
       INSERT INTO credit_note_counters (org_id, last_number) VALUES ($2, 1)
       ON CONFLICT (org_id) DO UPDATE SET last_number = credit_note_counters.last_number + 1
       RETURNING CASE WHEN last_number < 1000000 THEN 'CN-' || lpad(last_number::text, 6, '0')
                      ELSE 'CN-' || last_number::text END AS number
     ), memo AS (
       INSERT INTO invoice_transactions (org_id, invoice_id, type, amount, method, status, note)
       SELECT $2, $3, 'CREDIT_MEMO', $12, 'EXTERNAL', 'COMPLETED', 'Credit note ' || c.number
         FROM counter c WHERE $12::numeric > 0
       RETURNING id
     ), settled AS (
       UPDATE invoices SET amount_paid = $14, status = $21, updated_at = now()
        WHERE org_id = $2 AND id = $3 AND $12::numeric > 0
     ), note AS (
       INSERT INTO credit_notes (id, org_id, number, invoice_id, customer_id, currency, reason, memo, subtotal,
         tax_amount, total, tax_lines, applied_to_invoice, credited_to_customer, invoice_transaction_id,
         credit_grant_id, usage_event_id, created_at)
       SELECT $1, $2, c.number, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, (SELECT id FROM memo),
              $15, $16, date_trunc('milliseconds', now())
         FROM counter c
       RETURNING number, created_at
     ), note_lines AS (
       INSERT INTO credit_note_lines (org_id, credit_note_id, position, invoice_item_id, description, amount, tax_amount)
       SELECT $2, $1, l.position - 1, l.item, l.description, l.amount, l.tax
         FROM note, unnest($17::bigint[], $18::text[], $19::numeric[], $20::numeric[])
              WITH ORDINALITY AS l(item, description, amount, tax, position)
     ), named AS (
       UPDATE credit_grants SET name = 'Credit note ' || (SELECT number FROM counter)
        WHERE org_id = $2 AND id = $15
     ), emitted AS (
       INSERT INTO outbox (org_id, event_type, data)
       SELECT $2, e.type,
              CASE e.type
                WHEN 'credit_note.created'
                  THEN e.data::jsonb || jsonb_build_object('number', n.number, 'created_at',
                         to_char(n.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                WHEN 'credit_grant.created'
                  THEN e.data::jsonb || jsonb_build_object('name', 'Credit note ' || n.number)
                ELSE e.data::jsonb
              END
         FROM note n, unnest($22::text[], $23::text[]) WITH ORDINALITY AS e(type, data, position)
        ORDER BY e.position
     )
     SELECT number, created_at FROM note`,
    [
      noteId,
      invoice.org_id,
      invoice.id,
      invoice.customer_id,
      invoice.currency,
      input.reason,
      input.memo ?? null,
      formatMoney(subtotal),
      formatMoney(tax.amount),
      formatMoney(total),
      JSON.stringify(tax.lines),
      formatMoney(applied),
      formatMoney(credited),
      memo?.amountPaid ?? null,
      grantId,
      request.usageEventId ?? null,
      lines.map((line) => line.item.id),
      lines.map((line) => line.item.description),
      lineAmounts,
      lineTaxes,
      memo?.status ?? null,
      events.map((event) => event.type),
      events.map((event) => JSON.stringify(event.data)),
    ],
  );
  await wakeDispatcherAfterCommit(tx);
  if (memo && (facts.subscription_status === 'past_due' || facts.subscription_status === 'unpaid')) {
    await restoreIfSettled(tx, utcDate(new Date()), invoice.org_id, invoice.subscription_id);
  }
  const { number, created_at } = rows[0]!;
  return { ...draft, number, created_at: created_at.toISOString() } as CreditNote;
}

interface CheckedLine {
  item: ItemRow;
  amount: bigint;
}

/** Every problem of the lines at once, each naming its field (`lines.<i>.amount`). */
function checkLines(
  invoice: LockedInvoice,
  items: readonly ItemRow[],
  requested: readonly { invoice_item_id: number; amount: string }[],
): CheckedLine[] {
  const byId = new Map(items.map((item) => [Number(item.id), item]));
  const creditedNow = new Map<number, bigint>();
  const problems: FieldError[] = [];
  const lines: CheckedLine[] = [];
  const digits = knownMinorUnitDigits(invoice.currency);
  for (const [index, line] of requested.entries()) {
    const item = byId.get(line.invoice_item_id);
    if (!item) {
      problems.push({
        field: `lines.${index}.invoice_item_id`,
        message: `Item ${line.invoice_item_id} is not a line of invoice ${invoice.invoice_number}.`,
        code: 'invalid_value',
      });
      continue;
    }
    const amount = parseMoney(line.amount);
    const field = `lines.${index}.amount`;
    if (amount <= 0n) {
      problems.push({ field, message: 'Must be greater than zero.', code: 'out_of_range' });
      continue;
    }
    if (digits !== undefined && !isInMinorUnits(amount, invoice.currency)) {
      problems.push({
        field,
        message: `Must be in whole ${invoice.currency} minor units (${digits === 0 ? 'no decimals' : `at most ${digits} decimals`}).`,
        code: 'invalid_format',
      });
      continue;
    }
    const before = parseMoney(item.credited) + (creditedNow.get(line.invoice_item_id) ?? 0n);
    const lineAmount = parseMoney(item.line_total_pre_tax);
    if (before + amount > lineAmount) {
      const left = lineAmount - before > 0n ? lineAmount - before : 0n;
      problems.push({
        field,
        message: `Exceeds what is left to credit on item ${item.id} (${formatMoney(left)} ${invoice.currency} of ${formatMoney(lineAmount)}).`,
        code: 'out_of_range',
      });
      continue;
    }
    creditedNow.set(line.invoice_item_id, (creditedNow.get(line.invoice_item_id) ?? 0n) + amount);
    lines.push({ item, amount });
  }
  if (problems.length > 0) throw ApiError.validation(problems);
  return lines;
}

interface InvoiceFacts {
  subscription_status: string | null;
  subtotal: string;
  tax_amount: string;
  invoice_date: string;
  country: string;
  state_province: string | null;
  tax_exempt: boolean;
  items: ItemRow[];
  earlier: { subtotal: string; tax_lines: TaxComponentAmount[] }[];
}

/**
 * What a note is checked and taxed against, in one query under the invoice's lock: its lines with
 * what earlier notes credited of each, its tax and subtotal, the customer's destination, and the
 * earlier notes' subtotals and tax by component.
 */
async function invoiceFacts(tx: Queryable, invoice: LockedInvoice): Promise<InvoiceFacts> {
  const { rows } = await tx.query<InvoiceFacts>(
    `SELECT i.subtotal::text, i.tax_amount::text, to_char(i.invoice_date, 'YYYY-MM-DD') AS invoice_date,
            (SELECT s.status FROM subscriptions s WHERE s.org_id = i.org_id AND s.id = i.subscription_id)
              AS subscription_status,
            c.country, c.state_province, c.tax_exempt,
            (SELECT coalesce(json_agg(json_build_object('id', ii.id, 'description', ii.description,
                      'line_total_pre_tax', ii.line_total_pre_tax::text, 'tax_type', ii.tax_type,
                      'credited', coalesce((SELECT sum(l.amount) FROM credit_note_lines l
                                             WHERE l.invoice_item_id = ii.id), 0)::text)
                      ORDER BY ii.position, ii.id), '[]'::json)
               FROM invoice_items ii WHERE ii.org_id = i.org_id AND ii.invoice_id = i.id) AS items,
            (SELECT coalesce(json_agg(json_build_object('subtotal', n.subtotal::text, 'tax_lines', n.tax_lines)), '[]'::json)
               FROM credit_notes n WHERE n.org_id = i.org_id AND n.invoice_id = i.id) AS earlier
       FROM invoices i JOIN customers c ON c.org_id = i.org_id AND c.id = i.customer_id
      WHERE i.org_id = $1 AND i.id = $2`,
    [invoice.org_id, invoice.id],
  );
  return rows[0]!;
}

/** The note's tax by component, earlier notes of the invoice counted (noteTax). */
function reverseTax(
  invoice: LockedInvoice,
  facts: InvoiceFacts,
  subtotal: bigint,
): { lines: TaxComponentAmount[]; amount: bigint } {
  let rule: TaxRule | undefined;
  try {
    rule = taxRuleFor(
      { country: facts.country, stateProvince: facts.state_province, taxExempt: facts.tax_exempt },
      facts.invoice_date,
    );
  } catch {
    rule = undefined; // a region the table no longer knows: the stored tax is split instead
  }
  const components = invoiceTaxComponents(
    {
      subtotal: facts.subtotal,
      tax_amount: facts.tax_amount,
      currency: invoice.currency,
      taxType: facts.items.find((item) => item.tax_type !== null)?.tax_type ?? null,
    },
    rule,
  );
  const taxBefore = new Map<string, bigint>();
  let subtotalBefore = 0n;
  for (const earlier of facts.earlier) {
    subtotalBefore += parseMoney(earlier.subtotal);
    for (const line of earlier.tax_lines) {
      taxBefore.set(line.name, (taxBefore.get(line.name) ?? 0n) + parseMoney(line.amount));
    }
  }
  return noteTax({
    components,
    invoiceSubtotal: parseMoney(facts.subtotal),
    currency: invoice.currency,
    subtotal,
    creditedBefore: { subtotal: subtotalBefore, tax: taxBefore },
  });
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
 * invoice or customer named but not the organization's is a 404.
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
      columns: CREDIT_NOTE_COLUMNS,
      where,
      values,
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
       FROM credit_notes WHERE org_id = $1 AND invoice_id = $2 ORDER BY created_at, number`,
    [orgId, invoiceId],
  );
  return rows.map((row) => ({ ...row, total: m(row.total) }));
}
