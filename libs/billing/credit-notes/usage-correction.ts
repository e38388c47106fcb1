import type { Database, Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { formatMoney, formatScaled, parseMoney, parseScaled } from '../../money/index.js';
import type { UsageEventWithStatus } from '../../schemas/index.js';
import {
  PostgresUsageAggregator,
  type UsageReadStores,
  type VoidingEvent,
  voidUsageEventWith,
} from '../../usage/index.js';
import { addMonthsAnchored, PERIOD_MONTHS, utcDate } from '../domain/index.js';
import { composePeriodInvoice, itemForPeriod } from '../invoices/index.js';
import {
  type DueSubscription,
  type InvoiceTarget,
  loadInvoiceInputs,
  loadSubscriptionSchedule,
  periodInvoiceInput,
} from '../run/index.js';
import { CREDITABLE_STATUSES } from './credit-notes.js';
import { createCreditNote } from './issue.js';

/**
 * `POST /usage/events/{id}/void` `{ correction: "credit_note" }` (docs/decisions.md, "Corrections
 * are priced by the difference"): an event of a posted period is voided together with a
 * `usage_correction` credit note for exactly what it added to its invoice line. The line is
 * re-rated with and without the event by composePeriodInvoice, the code the billing run priced
 * it with (tiers, included units, the minor unit), over the period's quantity as Postgres holds
 * it; the note credits the difference, and its tax is reversed as for any note.
 *
 * Refused (409, nothing voided): an event of a period not invoiced yet (a plain void does), of a
 * period whose invoice is a DRAFT or not creditable, and a line whose amount no longer matches its
 * usage (late usage billed elsewhere, an earlier change of terms): that one takes a credit note by
 * hand.
 */

const UNIT_SCALE = 8;

export async function voidUsageWithCreditNote(
  db: Database,
  stores: UsageReadStores,
  orgId: number,
  eventId: string,
): Promise<UsageEventWithStatus & { credit_note_id: string | null }> {
  const { event, correction } = await voidUsageEventWith(db, stores, orgId, eventId, {
    fresh: (tx, voiding) => correct(tx, orgId, voiding),
    already: async (tx, voided) => {
      const { rows } = await tx.query<{ id: string }>(
        'SELECT id FROM credit_notes WHERE org_id = $1 AND usage_event_id = $2 ORDER BY created_at LIMIT 1',
        [orgId, voided.id],
      );
      return rows[0]?.id ?? null;
    },
  });
  return { ...event, credit_note_id: correction };
}

async function correct(tx: Queryable, orgId: number, event: VoidingEvent): Promise<string | null> {
  const { rows: owner } = await tx.query<{ subscription_id: number }>(
    'SELECT subscription_id FROM subscription_items WHERE org_id = $1 AND id = $2',
    [orgId, event.subscription_item_id],
  );
  const subscription = owner[0]
    ? await loadSubscriptionSchedule(tx, orgId, Number(owner[0].subscription_id))
    : undefined;
  if (!subscription || event.occurred_at >= subscription.current_period_start) {
    throw ApiError.conflict(
      `Usage event ${event.id} belongs to a period not invoiced yet: void it without a correction.`,
    );
  }
  const period = periodAt(subscription, event.occurred_at);
  // A period may have two invoices: a draft withdrawn unposted and the one that billed it again
  // (invoices_period_once allows one of the latter kind): that one, whenever it was made.
  const { rows: invoices } = await tx.query<{ id: string; invoice_number: string; status: string }>(
    `SELECT id, invoice_number, status FROM invoices
      WHERE org_id = $1 AND subscription_id = $2 AND period_start = $3::date
      ORDER BY (status = 'WITHDRAWN' AND posted_at IS NULL), created_at DESC
      LIMIT 1`,
    [orgId, subscription.id, utcDate(period.start)],
  );
  const invoice = invoices[0];
  if (!invoice) {
    throw ApiError.conflict(
      `Usage event ${event.id} belongs to a period not invoiced yet: void it without a correction.`,
    );
  }
  if (!CREDITABLE_STATUSES.includes(invoice.status as (typeof CREDITABLE_STATUSES)[number])) {
    throw ApiError.conflict(
      `Usage event ${event.id} belongs to invoice ${invoice.invoice_number}, which is ${invoice.status}: ` +
        'only a posted invoice takes a correcting credit note.',
    );
  }

  // the period's quantity as the run counts it (the event still in it), priced with and without it
  const target: InvoiceTarget = {
    subscription,
    step: { kind: 'invoice', periodStart: period.start, periodEnd: period.end, firstPeriod: false },
  };
  const inputs = await loadInvoiceInputs(
    tx,
    { usage: new PostgresUsageAggregator(tx), lockCustomers: false },
    [target],
  );
  const composed = periodInvoiceInput(target, inputs);
  const item = composed.items.find(
    (candidate) => candidate.subscription_item_id === event.subscription_item_id,
  );
  if (item?.usage_type !== 'metered' || !itemForPeriod(item, period)) {
    throw ApiError.conflict(
      `Usage event ${event.id} has no metered line on invoice ${invoice.invoice_number}.`,
    );
  }
  const quantity = parseScaled(composed.usage.get(item.subscription_item_id) ?? '0', UNIT_SCALE);
  const without = quantity - parseScaled(event.quantity, UNIT_SCALE);
  const priced = (units: bigint): bigint => {
    const draft = composePeriodInvoice({
      ...composed,
      items: [item],
      prorationLines: [],
      usage: new Map([[item.subscription_item_id, formatScaled(units < 0n ? 0n : units, UNIT_SCALE)]]),
      // the line's amount before tax: the note reverses the tax itself
      customer: { ...composed.customer, tax_exempt: true },
    });
    return parseMoney(draft.lines[0]?.line_total_pre_tax ?? '0');
  };
  const withEvent = priced(quantity);
  const difference = withEvent - priced(without);

  // the line as invoiced, less what earlier corrections gave back, must be what the run charges
  // for the quantity now: else the line holds more than this period's usage, and the difference
  // the event made cannot be told
  const { rows: lines } = await tx.query<{ id: number; line_total_pre_tax: string; corrected: string }>(
    `SELECT ii.id, ii.line_total_pre_tax::text,
            coalesce((SELECT sum(l.amount) FROM credit_note_lines l JOIN credit_notes n ON n.id = l.credit_note_id
                       WHERE l.invoice_item_id = ii.id AND n.usage_event_id IS NOT NULL), 0)::text AS corrected
       FROM invoice_items ii
      WHERE ii.org_id = $1 AND ii.invoice_id = $2 AND ii.subscription_item_id = $3
      ORDER BY ii.position, ii.id LIMIT 1`,
    [orgId, invoice.id, item.subscription_item_id],
  );
  const line = lines[0];
  if (!line || parseMoney(line.line_total_pre_tax) - parseMoney(line.corrected) !== withEvent) {
    throw ApiError.conflict(
      `The line of usage event ${event.id} on invoice ${invoice.invoice_number} no longer matches the period's usage; ` +
        'issue a credit note for it by hand (POST /invoices/{id}/credit-notes), then void the event.',
    );
  }
  if (difference < 0n) {
    // volume pricing: fewer units can reach a dearer tier; a credit note cannot charge more
    throw ApiError.conflict(
      `Voiding usage event ${event.id} would raise its line on invoice ${invoice.invoice_number} ` +
        `(by ${formatMoney(-difference)}): a credit note cannot charge more, so it stays counted.`,
    );
  }
  if (difference === 0n) return null; // within included units, or a flat fee: the event cost nothing
  const note = await createCreditNote(tx, {
    orgId,
    invoiceId: invoice.id,
    usageEventId: event.id,
    input: {
      reason: 'usage_correction',
      lines: [{ invoice_item_id: Number(line.id), amount: formatMoney(difference) }],
      memo: `Usage event ${event.id} voided`,
    },
  });
  return note.id;
}

/** The billing period of `subscription` that holds `at` (before its current period). */
function periodAt(subscription: DueSubscription, at: Date): { start: Date; end: Date } {
  let end = subscription.current_period_start;
  for (let step = 0; step < 1200; step++) {
    const back = addMonthsAnchored(
      end,
      -PERIOD_MONTHS[subscription.billing_period],
      subscription.billing_anchor_day,
    );
    const start = back < subscription.start_date ? subscription.start_date : back;
    if (at >= start || start <= subscription.start_date) return { start, end };
    end = start;
  }
  return { start: subscription.start_date, end };
}
