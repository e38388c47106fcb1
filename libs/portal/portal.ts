import { listCreditNotes } from '../billing/index.js';
import type { Queryable } from '../db/index.js';
import { displayDate, type Locale, messagesFor } from '../i18n/index.js';
import {
  loadPrintableCreditNote,
  loadPrintableInvoice,
  type PrintableCreditNote,
  type PrintableInvoice,
} from '../invoice-documents/index.js';
import { isUuid } from '../schemas/index.js';
import { listSubscriptions } from '../subscriptions/index.js';
import { customerAlerts, portalCsrfToken } from './alerts.js';
import type { HostedInvoiceAccess } from './hosted-invoices.js';
import { type InvoiceLinks, type InvoiceSummary, renderInvoicePage, renderPortalHome } from './pages.js';
import { type Granted, PORTAL_PATH, type PortalAccess } from './sessions.js';
import type { PortalCredits, PortalUsage, PortalUsageSource } from './usage-source.js';

/** The most invoices and subscriptions one page lists (two years of monthly invoices fit many times). */
const PAGE_LIMIT = 100;

export interface PageRequest {
  /** Base of every link on the page (PUBLIC_URL, else the api's own URL). */
  base: string;
  locale: Locale;
  now?: Date;
}

/** Links of an invoice opened from the portal session `token`. */
export function portalInvoiceLinks(token: string, invoiceId: string): InvoiceLinks {
  const page = `${PORTAL_PATH}/${token}/invoices/${invoiceId}`;
  return { page, printable: `${page}/print`, pdf: `${page}/pdf` };
}

/** The printable HTML and PDF of a credit note opened from the portal session `token`. */
export function portalCreditNoteLinks(token: string, noteId: string): { printable: string; pdf: string } {
  const base = `${PORTAL_PATH}/${token}/credit-notes/${noteId}`;
  return { printable: `${base}/print`, pdf: `${base}/pdf` };
}

/** Links of an invoice opened from its hosted link `token`. */
export function hostedInvoiceLinks(token: string): InvoiceLinks {
  const page = `${PORTAL_PATH}/invoice/${token}`;
  return { page, printable: `${page}/print`, pdf: `${page}/pdf` };
}

/**
 * Which invoices a customer sees: those ever issued to them (posted_at is set when an invoice is
 * posted and never cleared). A draft was never sent, so neither it nor a draft withdrawn before
 * posting is shown, whatever its status says now.
 */
const ISSUED = 'posted_at IS NOT NULL';

/**
 * The customer's issued invoices, newest first by invoice date, as a person reads a list of bills
 * (an invoice of an earlier period may be created after a later one, and numbered after it).
 */
async function issuedInvoices(db: Queryable, orgId: number, customerId: number): Promise<InvoiceSummary[]> {
  const { rows } = await db.query<InvoiceSummary>(
    `SELECT id, invoice_number, invoice_date, due_date, status, total,
            (total - amount_paid)::numeric(20, 8) AS balance, currency
       FROM invoices
      WHERE org_id = $1 AND customer_id = $2 AND ${ISSUED}
      ORDER BY invoice_date DESC, created_at DESC, id DESC
      LIMIT ${PAGE_LIMIT}`,
    [orgId, customerId],
  );
  return rows;
}

/** The portal's home page for the session's customer. */
export async function portalHomePage(
  db: Queryable,
  access: Granted<PortalAccess>,
  token: string,
  request: PageRequest & {
    usageSource: PortalUsageSource | undefined;
    /** Offer the alerts card (with its forms); `refused`: why the last add was refused. */
    alerts?: { refused?: string | undefined } | undefined;
  },
): Promise<string> {
  const { orgId, customerId } = access;
  const now = request.now ?? new Date();
  const [subscriptions, invoices, creditNotes] = await Promise.all([
    listSubscriptions(db, orgId, { customerId }, { limit: PAGE_LIMIT, offset: 0 }),
    issuedInvoices(db, orgId, customerId),
    listCreditNotes(db, orgId, { customerId }, { limit: PAGE_LIMIT, offset: 0 }),
  ]);
  let usage: Map<number, PortalUsage> | 'unavailable' = 'unavailable';
  let credits: PortalCredits | undefined;
  if (request.usageSource) {
    const source = request.usageSource;
    const [read, creditsRead] = await Promise.all([
      Promise.all(subscriptions.data.map((s) => source.read(orgId, s.id))),
      source.credits(orgId, customerId),
    ]);
    credits = creditsRead;
    usage = new Map();
    subscriptions.data.forEach((subscription, i) => {
      if (read[i]) (usage as Map<number, PortalUsage>).set(subscription.id, read[i]);
    });
  }
  return renderPortalHome({
    locale: request.locale,
    base: request.base,
    path: `${PORTAL_PATH}/${token}`,
    organization: access.organizationName,
    customerName: access.customerName,
    expiresAt: access.expiresAt,
    today: now.toISOString().slice(0, 10),
    subscriptions: subscriptions.data,
    usage,
    invoices,
    linksOf: (invoice: InvoiceSummary) => portalInvoiceLinks(token, invoice.id),
    creditNotes: { notes: creditNotes.data, linksOf: (note) => portalCreditNoteLinks(token, note.id) },
    credits,
    alerts: request.alerts
      ? {
          list: await customerAlerts(db, access),
          subscriptions: subscriptions.data
            .filter((s) => s.status !== 'canceled' && s.status !== 'expired')
            .map((s) => ({ id: s.id, title: s.title })),
          csrf: portalCsrfToken(token),
          addPath: `${PORTAL_PATH}/${token}/alerts`,
          removePath: (alertId: string) => `${PORTAL_PATH}/${token}/alerts/${alertId}/delete`,
          refused: request.alerts.refused,
        }
      : undefined,
  });
}

/**
 * The printable invoice `invoiceId` if the session's customer may see it: the organization's,
 * the customer's, ever issued (see ISSUED). Anything else is not found, exactly like an unknown id.
 */
export async function portalPrintableInvoice(
  db: Queryable,
  access: Granted<PortalAccess> | Granted<HostedInvoiceAccess>,
  invoiceId: string,
  request: PageRequest,
): Promise<PrintableInvoice | undefined> {
  if (!isUuid(invoiceId)) return undefined;
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM invoices WHERE org_id = $1 AND id = $2 AND customer_id = $3 AND ${ISSUED}`,
    [access.orgId, invoiceId, access.customerId],
  );
  if (!rows[0]) return undefined;
  return loadPrintableInvoice(db, access.orgId, rows[0].id, { locale: request.locale, now: request.now });
}

/**
 * The printable credit note `noteId` if the session's customer may see it (the organization's, the
 * customer's); anything else is not found, exactly like an unknown id.
 */
export async function portalPrintableCreditNote(
  db: Queryable,
  access: Granted<PortalAccess>,
  noteId: string,
  request: PageRequest,
): Promise<PrintableCreditNote | undefined> {
  if (!isUuid(noteId)) return undefined;
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM credit_notes WHERE org_id = $1 AND id = $2 AND customer_id = $3',
    [access.orgId, noteId, access.customerId],
  );
  if (!rows[0]) return undefined;
  return loadPrintableCreditNote(db, access.orgId, rows[0].id, { locale: request.locale });
}

/** An invoice's page opened from a portal session (with a way back) or from its hosted link. */
export function invoicePage(
  printable: PrintableInvoice,
  request: PageRequest,
  opened:
    | { from: 'portal'; token: string; expiresAt: Date }
    | { from: 'hosted'; token: string; validUntil: Date | null },
): string {
  const m = messagesFor(request.locale);
  const links =
    opened.from === 'portal'
      ? portalInvoiceLinks(opened.token, printable.invoice.id)
      : hostedInvoiceLinks(opened.token);
  const until = opened.from === 'portal' ? opened.expiresAt : opened.validUntil;
  return renderInvoicePage({
    base: request.base,
    path: links.page,
    printable,
    links,
    ...(opened.from === 'portal' ? { back: `${PORTAL_PATH}/${opened.token}` } : {}),
    footer: until
      ? opened.from === 'portal'
        ? m.sessionExpires(displayDate(until.toISOString(), request.locale))
        : m.linkValidUntil(displayDate(until.toISOString(), request.locale))
      : '',
  });
}
