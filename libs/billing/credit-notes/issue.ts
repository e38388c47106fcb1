import { randomUUID } from 'node:crypto';
import { Batcher } from '../../batching/index.js';
import { Database, type Queryable } from '../../db/index.js';
import { ApiError, type FieldError } from '../../errors/index.js';
import { type DomainEvent, wakeDispatcherAfterCommit } from '../../events/index.js';
import { formatMoney, isInMinorUnits, knownMinorUnitDigits, parseMoney } from '../../money/index.js';
import {
  CreateCreditNote,
  type CreditNote,
  type InvoiceStatus,
  isUuid,
  type TaxType,
} from '../../schemas/index.js';
import { type LockedInvoice, planCreditMemo, restoreIfSettled } from '../collection/index.js';
import { insertGrant, lockCreditCustomer, toCreditGrant } from '../credits/index.js';
import { invoiceEventData, parseInput, utcDate } from '../domain/index.js';
import { shareOut } from '../invoices/index.js';
import { type TaxRule, taxRuleFor } from '../tax/index.js';
import { CREDITABLE_STATUSES, type CreditNoteRequest } from './credit-notes.js';
import { invoiceTaxComponents, noteTax, type TaxComponentAmount } from './tax-reversal.js';

/**
 * Issuing credit notes (docs/decisions.md, "Credit notes" and "Concurrent credit notes share their
 * statements"). Notes are issued in groups: the invoices of every note of the group and what they
 * were credited so far are read in one statement, every note is worked out in memory one after
 * the other (a note sees what the notes before it in the group credited, as if it had come after
 * them), and the notes accepted are written in one statement that bumps each organization's
 * counter once by their number (gapless: numbers are given to notes written only). On a Database
 * the read takes no lock and the write is conditioned on each invoice's row version
 * (issueOptimistic); in a transaction, or for notes with grants, the invoices are locked first
 * (issueGroup). A note refused (404, 409, 422) is only its own request's answer: it takes no
 * number and changes nothing its neighbours see.
 */

/** The statuses in which a CREDIT_MEMO may still lower the balance (collection's payable ones). */
const MEMO_STATUSES: readonly InvoiceStatus[] = ['POSTED', 'PARTIALLY_PAID', 'PARTIALLY_REFUNDED'];

/** A request whose body was parsed: what a group is made of. */
interface ParsedRequest {
  invoiceId: string;
  orgId: number | undefined;
  input: ReturnType<typeof CreateCreditNote.parse>;
  usageEventId: string | undefined;
}

type Settled = { value: CreditNote } | { error: unknown };

function parseRequest(request: CreditNoteRequest): ParsedRequest {
  return {
    invoiceId: request.invoiceId,
    orgId: request.orgId,
    input: parseInput(CreateCreditNote, request.input),
    usageEventId: request.usageEventId,
  };
}

/**
 * Issues a credit note in the caller's transaction (the console, a usage correction). 404 for an
 * invoice of another organization; 409 unless the invoice is POSTED, PARTIALLY_PAID, PAID or
 * PARTIALLY_REFUNDED; 422 per field for bad lines, a line credited beyond its amount (earlier
 * notes counted) included.
 */
export async function createCreditNote(tx: Queryable, request: CreditNoteRequest): Promise<CreditNote> {
  return settle((await issueGroup(tx, [parseRequest(request)]))[0]!);
}

const groups = new WeakMap<Database, Batcher<ParsedRequest, Settled>>();

/**
 * Issues a credit note as createCreditNote does, on a Database: the notes of concurrent requests
 * share their statements and their commit (group commit, issueOptimistic), each answered with its
 * own note or its own error. A write that fails as a whole (the database gone, a deadlock) fails
 * every request of its group, as each would have failed alone; it is never run again note by note.
 */
export async function issueCreditNote(db: Queryable, request: CreditNoteRequest): Promise<CreditNote> {
  const parsed = parseRequest(request);
  if (!(db instanceof Database)) return settle((await issueGroup(db, [parsed]))[0]!);
  let batcher = groups.get(db);
  if (!batcher) {
    batcher = new Batcher((requests) => issueOptimistic(db, requests), {
      lingerMs: GROUP_LINGER_MS,
      maxInFlight: GROUPS_IN_FLIGHT,
      maxWeight: GROUP_MAX,
    });
    groups.set(db, batcher);
  }
  return settle(await batcher.submit(parsed));
}

function settle(settled: Settled): CreditNote {
  if ('error' in settled) throw settled.error;
  return settled.value;
}

/** While a group is written, the notes of the next gather for at most this long. */
const GROUP_LINGER_MS = 2;
/** Groups being written at once before the next waits out the linger. */
const GROUPS_IN_FLIGHT = 2;
/** Notes per group, at most. */
const GROUP_MAX = 50;

interface ItemRow {
  id: number;
  description: string;
  line_total_pre_tax: string;
  tax_type: TaxType | null;
  /** What notes credited of it so far (those of the group before the note counted). */
  credited: string;
}

interface InvoiceFacts {
  id: string;
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

/** A note accepted in memory, waiting for its grant and its number. */
interface PlannedNote {
  index: number;
  invoice: LockedInvoice;
  draft: Omit<CreditNote, 'number' | 'created_at'>;
  memoId: string | null;
  /** Events before credit_note.created (invoice.paid, credit_grant.created), in order. */
  events: { type: DomainEvent['type']; data: Record<string, unknown> }[];
  credited: bigint;
  restore: boolean;
}

/**
 * The notes of `requests`, in order, in the transaction `tx`: five statements for the whole group
 * (the invoices' locks, their facts, the write; BEGIN and COMMIT), and a lock and an insert per
 * note that gives a grant.
 */
async function issueGroup(tx: Queryable, requests: readonly ParsedRequest[]): Promise<Settled[]> {
  const outcomes: Settled[] = new Array(requests.length);
  const invoices = await lockInvoices(tx, requests);
  const facts = await invoicesFacts(tx, [...invoices.values()]);
  const planned = planAll(requests, invoices, facts, outcomes);
  if (planned.length === 0) return outcomes;

  // The customers of the grants, in id order after the invoices, as every grant writer locks them
  // (libs/billing/credits); then the grants, each named after its note by the write.
  const customers = new Map<number, number>();
  for (const note of planned) {
    if (note.credited > 0n) customers.set(note.invoice.customer_id, note.invoice.org_id);
  }
  for (const customerId of [...customers.keys()].sort((a, b) => a - b)) {
    await lockCreditCustomer(tx, customerId, customers.get(customerId));
  }
  for (const note of planned) {
    if (note.credited === 0n) continue;
    const grant = await insertGrant(tx, {
      org_id: note.invoice.org_id,
      customer_id: note.invoice.customer_id,
      name: 'Credit note',
      category: 'promotional',
      currency: note.invoice.currency,
      amount: note.credited,
      priority: 50,
      applies_to: 'all',
      effective_at: null,
      expires_at: null,
      status: 'ACTIVE',
      invoice_id: null,
      reference: null,
      source: 'credit_note',
    });
    note.draft.credit_grant_id = grant.id;
    note.events.push({ type: 'credit_grant.created', data: toCreditGrant(grant) });
  }

  const written = await writeNotes(tx, planned);
  await wakeDispatcherAfterCommit(tx);
  // a note settling an overdue invoice brings its past-due subscription back, as any credit memo
  const restored = new Set<string>();
  for (const note of planned) {
    const key = `${note.invoice.org_id}/${note.invoice.subscription_id}`;
    if (!note.restore || restored.has(key)) continue;
    restored.add(key);
    await restoreIfSettled(tx, utcDate(new Date()), note.invoice.org_id, note.invoice.subscription_id);
  }
  for (const note of planned) {
    const { number, created_at } = written.get(note.draft.id)!;
    outcomes[note.index] = {
      value: { ...note.draft, number, created_at: created_at.toISOString() } as CreditNote,
    };
  }
  return outcomes;
}

/** Each request worked out in order: the accepted notes returned, each refusal in `outcomes`. */
function planAll(
  requests: readonly ParsedRequest[],
  invoices: ReadonlyMap<string, LockedInvoice>,
  facts: ReadonlyMap<string, InvoiceFacts>,
  outcomes: Settled[],
): PlannedNote[] {
  const planned: PlannedNote[] = [];
  for (const [index, request] of requests.entries()) {
    try {
      const invoice = invoices.get(request.invoiceId);
      if (!invoice || (request.orgId !== undefined && invoice.org_id !== request.orgId)) {
        throw ApiError.notFound(`Invoice ${request.invoiceId}`);
      }
      planned.push(planNote(index, request, invoice, facts.get(invoice.id)!));
    } catch (error) {
      outcomes[index] = { error };
    }
  }
  return planned;
}

/**
 * A group on a Database without BEGIN and COMMIT: one statement reads the invoices (their row
 * versions, `xmin`) and facts, the notes are worked out in memory, and one statement writes them
 * on the condition that each invoice's row is still the version read (it locks them in id order,
 * FOR UPDATE, then the counters): every note of an invoice updates its row (its credit memo), as
 * every other writer of an invoice does, so a version unchanged means nothing the notes were
 * checked against has changed. The requests of an invoice that moved (refusals included: they may
 * have depended on a note of the group that was not written) are worked out again, up to
 * OPTIMISTIC_ROUNDS times; what is left, and any group with a note that gives a grant or brings
 * a subscription back from past due (statements of their own), goes through the transaction.
 */
async function issueOptimistic(db: Database, requests: readonly ParsedRequest[]): Promise<Settled[]> {
  const outcomes: Settled[] = new Array(requests.length);
  let pending = requests.map((_, index) => index);
  for (let round = 0; round < OPTIMISTIC_ROUNDS && pending.length > 0; round++) {
    const group = pending.map((index) => requests[index]!);
    const { invoices, facts, versions } = await readInvoices(db, group);
    const answers: Settled[] = new Array(group.length);
    const planned = planAll(group, invoices, facts, answers);
    if (planned.some((note) => note.credited > 0n || note.restore)) break;
    const written = planned.length > 0 ? await writeNotes(db, planned, versions) : new Map();
    if (written.size > 0) await wakeDispatcherAfterCommit(db);
    const moved = new Set(
      planned.filter((note) => !written.has(note.draft.id)).map((note) => note.invoice.id),
    );
    const byIndex = new Map(planned.map((note) => [note.index, note]));
    const next: number[] = [];
    for (const [k, request] of group.entries()) {
      if (moved.has(request.invoiceId)) {
        next.push(pending[k]!);
        continue;
      }
      const note = byIndex.get(k);
      if (note) {
        const { number, created_at } = written.get(note.draft.id)!;
        answers[k] = { value: { ...note.draft, number, created_at: created_at.toISOString() } as CreditNote };
      }
      outcomes[pending[k]!] = answers[k]!;
    }
    pending = next;
  }
  if (pending.length > 0) {
    const rest = await db.transaction((tx) =>
      issueGroup(
        tx,
        pending.map((index) => requests[index]!),
      ),
    );
    for (const [k, index] of pending.entries()) outcomes[index] = rest[k]!;
  }
  return outcomes;
}

/** Rounds of the optimistic write before a group's remaining requests take the transaction. */
const OPTIMISTIC_ROUNDS = 3;

/**
 * The invoices the requests name, each only if it is of the organization that names it, with their
 * row versions and facts, in one statement (one snapshot), without a lock.
 */
async function readInvoices(
  db: Queryable,
  requests: readonly ParsedRequest[],
): Promise<{
  invoices: Map<string, LockedInvoice>;
  facts: Map<string, InvoiceFacts>;
  versions: Map<string, string>;
}> {
  const named = requests.filter((request) => isUuid(request.invoiceId));
  const invoices = new Map<string, LockedInvoice>();
  const facts = new Map<string, InvoiceFacts>();
  const versions = new Map<string, string>();
  if (named.length === 0) return { invoices, facts, versions };
  const { rows } = await db.query<InvoiceFacts & { invoice: Omit<LockedInvoice, 'id'>; version: string }>(
    `SELECT i.xmin::text AS version,
            json_build_object('org_id', i.org_id, 'customer_id', i.customer_id, 'subscription_id', i.subscription_id,
              'invoice_number', i.invoice_number, 'status', i.status, 'total', i.total::text,
              'amount_paid', i.amount_paid::text, 'amount_refunded', i.amount_refunded::text,
              'currency', i.currency) AS invoice,
            ${FACTS_COLUMNS}
       FROM invoices i JOIN customers c ON c.org_id = i.org_id AND c.id = i.customer_id
      WHERE i.id = ANY($1::uuid[])
        AND EXISTS (SELECT 1 FROM unnest($1::uuid[], $2::bigint[]) AS r(id, org)
                     WHERE r.id = i.id AND (r.org IS NULL OR r.org = i.org_id))`,
    [named.map((request) => request.invoiceId), named.map((request) => request.orgId ?? null)],
  );
  for (const { invoice, version, ...fact } of rows) {
    invoices.set(fact.id, { ...invoice, id: fact.id, currency: invoice.currency.trim() } as LockedInvoice);
    facts.set(fact.id, fact);
    versions.set(fact.id, version);
  }
  return { invoices, facts, versions };
}

/**
 * Locks the invoices the requests name (FOR UPDATE, in id order: two groups never wait on each
 * other in a circle), each only if it is of the organization that names it. A note of an invoice
 * applies after every note that locked it before, and its facts are read after the lock.
 */
async function lockInvoices(
  tx: Queryable,
  requests: readonly ParsedRequest[],
): Promise<Map<string, LockedInvoice>> {
  const named = requests.filter((request) => isUuid(request.invoiceId));
  if (named.length === 0) return new Map();
  const { rows } = await tx.query<LockedInvoice>(
    `SELECT i.id, i.org_id, i.customer_id, i.subscription_id, i.invoice_number, i.status, i.total, i.amount_paid,
            i.amount_refunded, i.currency
       FROM invoices i
      WHERE i.id = ANY($1::uuid[])
        AND EXISTS (SELECT 1 FROM unnest($1::uuid[], $2::bigint[]) AS r(id, org)
                     WHERE r.id = i.id AND (r.org IS NULL OR r.org = i.org_id))
      ORDER BY i.id
        FOR UPDATE OF i`,
    [named.map((request) => request.invoiceId), named.map((request) => request.orgId ?? null)],
  );
  return new Map(rows.map((row) => [row.id, { ...row, currency: row.currency.trim() }]));
}

/** An invoice's facts (InvoiceFacts) from `invoices i` and `customers c`. */
const FACTS_COLUMNS = `i.id, i.subtotal::text, i.tax_amount::text, to_char(i.invoice_date, 'YYYY-MM-DD') AS invoice_date,
  (SELECT s.status FROM subscriptions s WHERE s.org_id = i.org_id AND s.id = i.subscription_id) AS subscription_status,
  c.country, c.state_province, c.tax_exempt,
  (SELECT coalesce(json_agg(json_build_object('id', ii.id, 'description', ii.description,
            'line_total_pre_tax', ii.line_total_pre_tax::text, 'tax_type', ii.tax_type,
            'credited', coalesce((SELECT sum(l.amount) FROM credit_note_lines l
                                   WHERE l.invoice_item_id = ii.id), 0)::text)
            ORDER BY ii.position, ii.id), '[]'::json)
     FROM invoice_items ii WHERE ii.org_id = i.org_id AND ii.invoice_id = i.id) AS items,
  (SELECT coalesce(json_agg(json_build_object('subtotal', n.subtotal::text, 'tax_lines', n.tax_lines)), '[]'::json)
     FROM credit_notes n WHERE n.org_id = i.org_id AND n.invoice_id = i.id) AS earlier`;

/**
 * What the notes are checked and taxed against, in one statement after the invoices' locks (a
 * later statement, so it sees every note committed before the locks were granted): each invoice's
 * lines with what earlier notes credited of each, its tax and subtotal, the customer's
 * destination, and the earlier notes' subtotals and tax by component.
 */
async function invoicesFacts(
  tx: Queryable,
  invoices: readonly LockedInvoice[],
): Promise<Map<string, InvoiceFacts>> {
  if (invoices.length === 0) return new Map();
  const { rows } = await tx.query<InvoiceFacts>(
    `SELECT ${FACTS_COLUMNS}
       FROM unnest($1::bigint[], $2::uuid[]) AS r(org_id, id)
       JOIN invoices i ON i.org_id = r.org_id AND i.id = r.id
       JOIN customers c ON c.org_id = i.org_id AND c.id = i.customer_id`,
    [invoices.map((invoice) => invoice.org_id), invoices.map((invoice) => invoice.id)],
  );
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * One note worked out against its invoice as the notes before it left it; on success the invoice
 * (`invoice`, `facts`) is left as this note leaves it, for the next note of the group. Throws the
 * request's ApiError and changes nothing otherwise.
 */
function planNote(
  index: number,
  request: ParsedRequest,
  invoice: LockedInvoice,
  facts: InvoiceFacts,
): PlannedNote {
  const { input } = request;
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
  const lines = checkLines(invoice, facts.items, input.lines);
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
  // the memo is checked as collection checks any credit memo (the last check that may refuse)
  const memo = applied > 0n ? planCreditMemo(invoice, applied) : undefined;

  const events: PlannedNote['events'] = [];
  // the move to PAID happens once per invoice, as in collection (payments.ts)
  if (memo?.status === 'PAID') {
    events.push({
      type: 'invoice.paid',
      data: invoiceEventData({ ...invoice, status: memo.status, amount_paid: memo.amountPaid }),
    });
  }
  const lineTaxes = shares.map((share) => formatMoney(share));
  const draft: PlannedNote['draft'] = {
    id: randomUUID(),
    object: 'credit_note',
    invoice_id: invoice.id,
    customer_id: Number(invoice.customer_id),
    currency: invoice.currency,
    reason: input.reason,
    memo: input.memo ?? null,
    lines: lines.map((line, position) => ({
      invoice_item_id: Number(line.item.id),
      description: line.item.description,
      amount: formatMoney(line.amount),
      tax_amount: lineTaxes[position]!,
    })),
    subtotal: formatMoney(subtotal),
    tax: formatMoney(tax.amount),
    tax_lines: tax.lines,
    total: formatMoney(total),
    applied_to_invoice: formatMoney(applied),
    credited_to_customer: formatMoney(credited),
    credit_grant_id: null,
    usage_event_id: request.usageEventId ?? null,
  };

  // accepted: the invoice as this note leaves it, for the notes after it in the group
  if (memo) {
    invoice.status = memo.status;
    invoice.amount_paid = memo.amountPaid;
  }
  for (const line of lines) {
    line.item.credited = formatMoney(parseMoney(line.item.credited) + line.amount);
  }
  facts.earlier.push({ subtotal: draft.subtotal, tax_lines: tax.lines });
  return {
    index,
    invoice,
    draft,
    memoId: memo ? randomUUID() : null,
    events,
    credited,
    restore:
      memo !== undefined &&
      (facts.subscription_status === 'past_due' || facts.subscription_status === 'unpaid'),
  };
}

/**
 * The accepted notes of a group in one statement: the invoices locked in id order (FOR UPDATE)
 * and, with `versions`, kept only while still the row version read (the notes of the others are
 * not written: the caller works them out again); each organization's counter bumped once by the
 * count of its notes written, in org id order (the row every note of the organization takes is
 * held from here to the commit only), the numbers given in the group's order; the credit memos,
 * the invoices' new balances, the notes, their lines, the grants' names and the events
 * (credit_note.created with its number) in the outbox. Returns the notes written.
 */
async function writeNotes(
  q: Queryable,
  notes: readonly PlannedNote[],
  versions?: ReadonlyMap<string, string>,
): Promise<Map<string, { number: string; created_at: Date }>> {
  // the invoices' balances as the group's last note of each left them
  const invoices = new Map<string, LockedInvoice>();
  for (const note of notes) invoices.set(note.invoice.id, note.invoice);
  const memos = [...invoices.values()].filter((invoice) =>
    notes.some((n) => n.memoId && n.invoice === invoice),
  );
  const lines = notes.flatMap((note) => note.draft.lines.map((line, position) => ({ note, line, position })));
  const events = notes.flatMap((note) => [
    ...note.events.map((event) => ({ note, ...event })),
    { note, type: 'credit_note.created' as const, data: note.draft as Record<string, unknown> },
  ]);
  const { rows } = await q.query<{ id: string; number: string; created_at: Date }>(
    `WITH checked AS (
       SELECT i.id FROM invoices i JOIN unnest($1::uuid[], $2::text[]) AS r(id, version) ON r.id = i.id
        WHERE r.version IS NULL OR i.xmin::text = r.version
        ORDER BY i.id
          FOR UPDATE OF i
     ), accepted AS (
       SELECT g.*, row_number() OVER (PARTITION BY g.org_id ORDER BY g.position) AS rank,
              count(*) OVER (PARTITION BY g.org_id) AS n
         FROM unnest($3::uuid[], $4::bigint[], $5::uuid[], $6::bigint[], $7::text[], $8::text[], $9::text[],
                     $10::numeric[], $11::numeric[], $12::numeric[], $13::text[], $14::numeric[], $15::numeric[],
                     $16::uuid[], $17::uuid[], $18::uuid[])
              WITH ORDINALITY AS g(id, org_id, invoice_id, customer_id, currency, reason, memo, subtotal, tax_amount,
                                   total, tax_lines, applied, credited, memo_id, grant_id, usage_event_id, position)
        WHERE g.invoice_id IN (SELECT id FROM checked)
     ), counter AS (
       INSERT INTO credit_note_counters (org_id, last_number)
       SELECT DISTINCT a.org_id, a.n FROM accepted a ORDER BY a.org_id
       ON CONFLICT (org_id) DO UPDATE SET last_number = credit_note_counters.last_number + excluded.last_number
       RETURNING org_id, last_number
     ), given AS (
       SELECT a.*, CASE WHEN c.last_number - a.n + a.rank < 1000000
                        THEN 'CN-' || lpad((c.last_number - a.n + a.rank)::text, 6, '0')
                        ELSE 'CN-' || (c.last_number - a.n + a.rank)::text END AS number
         FROM accepted a JOIN counter c ON c.org_id = a.org_id
     ), memo AS (
       INSERT INTO invoice_transactions (id, org_id, invoice_id, type, amount, method, status, note)
       SELECT g.memo_id, g.org_id, g.invoice_id, 'CREDIT_MEMO', g.applied, 'EXTERNAL', 'COMPLETED',
              'Credit note ' || g.number
         FROM given g WHERE g.memo_id IS NOT NULL
        ORDER BY g.position
     ), settled AS (
       UPDATE invoices i SET amount_paid = s.amount_paid, status = s.status, updated_at = now()
         FROM unnest($19::bigint[], $20::uuid[], $21::numeric[], $22::text[]) AS s(org_id, id, amount_paid, status)
        WHERE i.org_id = s.org_id AND i.id = s.id AND s.id IN (SELECT id FROM checked)
     ), note AS (
       INSERT INTO credit_notes (id, org_id, number, invoice_id, customer_id, currency, reason, memo, subtotal,
         tax_amount, total, tax_lines, applied_to_invoice, credited_to_customer, invoice_transaction_id,
         credit_grant_id, usage_event_id, created_at)
       SELECT g.id, g.org_id, g.number, g.invoice_id, g.customer_id, g.currency, g.reason, g.memo, g.subtotal,
              g.tax_amount, g.total, g.tax_lines::jsonb, g.applied, g.credited, g.memo_id, g.grant_id,
              g.usage_event_id, date_trunc('milliseconds', now())
         FROM given g ORDER BY g.position
       RETURNING id, org_id, number, created_at
     ), note_lines AS (
       INSERT INTO credit_note_lines (org_id, credit_note_id, position, invoice_item_id, description, amount, tax_amount)
       SELECT n.org_id, n.id, l.position, l.item, l.description, l.amount, l.tax
         FROM unnest($23::uuid[], $24::int[], $25::bigint[], $26::text[], $27::numeric[], $28::numeric[])
              WITH ORDINALITY AS l(note_id, position, item, description, amount, tax, ordinal)
         JOIN note n ON n.id = l.note_id
        ORDER BY l.ordinal
     ), named AS (
       UPDATE credit_grants cg SET name = 'Credit note ' || g.number
         FROM given g WHERE cg.org_id = g.org_id AND cg.id = g.grant_id
     ), emitted AS (
       INSERT INTO outbox (org_id, event_type, data)
       SELECT n.org_id, e.type,
              CASE e.type
                WHEN 'credit_note.created'
                  THEN e.data::jsonb || jsonb_build_object('number', n.number, 'created_at',
                         to_char(n.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                WHEN 'credit_grant.created'
                  THEN e.data::jsonb || jsonb_build_object('name', 'Credit note ' || n.number)
                ELSE e.data::jsonb
              END
         FROM unnest($29::uuid[], $30::text[], $31::text[]) WITH ORDINALITY AS e(note_id, type, data, position)
         JOIN note n ON n.id = e.note_id
        ORDER BY e.position
     )
     SELECT id, number, created_at FROM note`,
    [
      [...invoices.keys()],
      [...invoices.keys()].map((id) => versions?.get(id) ?? null),
      notes.map((note) => note.draft.id),
      notes.map((note) => note.invoice.org_id),
      notes.map((note) => note.invoice.id),
      notes.map((note) => note.invoice.customer_id),
      notes.map((note) => note.draft.currency),
      notes.map((note) => note.draft.reason),
      notes.map((note) => note.draft.memo),
      notes.map((note) => note.draft.subtotal),
      notes.map((note) => note.draft.tax),
      notes.map((note) => note.draft.total),
      notes.map((note) => JSON.stringify(note.draft.tax_lines)),
      notes.map((note) => note.draft.applied_to_invoice),
      notes.map((note) => note.draft.credited_to_customer),
      notes.map((note) => note.memoId),
      notes.map((note) => note.draft.credit_grant_id),
      notes.map((note) => note.draft.usage_event_id),
      memos.map((invoice) => invoice.org_id),
      memos.map((invoice) => invoice.id),
      memos.map((invoice) => invoice.amount_paid),
      memos.map((invoice) => invoice.status),
      lines.map(({ note }) => note.draft.id),
      lines.map(({ position }) => position),
      lines.map(({ line }) => line.invoice_item_id),
      lines.map(({ line }) => line.description),
      lines.map(({ line }) => line.amount),
      lines.map(({ line }) => line.tax_amount),
      events.map(({ note }) => note.draft.id),
      events.map((event) => event.type),
      events.map((event) => JSON.stringify(event.data)),
    ],
  );
  return new Map(rows.map((row) => [row.id, row]));
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
