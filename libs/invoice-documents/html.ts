import { createHash } from 'node:crypto';
import {
  displayAmount,
  displayDate,
  displayMoney,
  displayQuantity,
  type Locale,
  type Messages,
  messagesFor,
} from '../i18n/index.js';
import { parseMoney } from '../money/index.js';
import { type PrintableCreditNote, taxNameOf } from './printable-credit-note.js';
import type { InvoiceParty, PrintableInvoice } from './printable-invoice.js';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Every value that comes from the database goes through here before it reaches the markup. */
export function escapeHtml(value: string | number): string {
  return String(value).replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

/** The document's whole stylesheet, inline: the printable invoice is one self-contained file. */
const INVOICE_STYLE = `
    body { font-family: Helvetica, Arial, sans-serif; font-size: 13px; color: #222; margin: 40px auto; max-width: 800px; }
    header { display: flex; justify-content: space-between; align-items: flex-start; }
    h1 { font-size: 28px; margin: 0; letter-spacing: 2px; }
    h2 { font-size: 11px; text-transform: uppercase; color: #666; margin: 0 0 4px; }
    p { margin: 2px 0; }
    .name { font-weight: bold; font-size: 15px; }
    .parties { display: flex; justify-content: space-between; margin: 28px 0; gap: 24px; }
    .party { flex: 1; }
    dl.details { display: grid; grid-template-columns: auto auto; gap: 2px 12px; margin: 0; }
    dl.details dt { color: #666; }
    dl.details dd { margin: 0; text-align: right; }
    table { width: 100%; border-collapse: collapse; margin-top: 12px; }
    th { text-align: left; border-bottom: 2px solid #222; padding: 6px 4px; font-size: 11px; text-transform: uppercase; }
    td { border-bottom: 1px solid #ddd; padding: 6px 4px; vertical-align: top; }
    .num { text-align: right; white-space: nowrap; }
    table.totals { width: 45%; margin-left: auto; }
    table.totals td { border: none; padding: 3px 4px; }
    table.totals tr.grand td { border-top: 2px solid #222; font-weight: bold; }
    .overdue { color: #b00020; font-weight: bold; }
    footer { margin-top: 32px; color: #666; font-size: 11px; }
    @media print { body { margin: 0; } }
  `;

/** What a Content-Security-Policy names to allow exactly this inline stylesheet and no other. */
export const INVOICE_STYLE_SOURCE = `'sha256-${createHash('sha256').update(INVOICE_STYLE).digest('base64')}'`;

/**
 * The headers the HTML document is served with: it needs no script, no remote resource and no
 * frame, so the policy forbids them; a value that escaped escaping could still not run.
 */
export const INVOICE_HTML_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'private, no-store',
} as const;

function party(title: string, who: InvoiceParty, m: Messages): string {
  const lines = [
    who.contactName ? m.attention(who.contactName) : null,
    ...who.addressLines,
    who.email,
    who.taxId ? m.taxId(who.taxId) : null,
  ].filter((line): line is string => Boolean(line));
  return `<section class="party">
      <h2>${escapeHtml(title)}</h2>
      <p class="name">${escapeHtml(who.name)}</p>
      ${lines.map((line) => `<p>${escapeHtml(line)}</p>`).join('\n      ')}
    </section>`;
}

/** A self-contained printable invoice (inline CSS, no script), the same content as the PDF, in its locale. */
/**
 * The top of a printable document, the same for an invoice and a credit note: head, the seller's
 * name beside the title and number, the parties, and the document's details (`details`: a label,
 * then its value already written as HTML).
 */
function documentOpening(document: {
  locale: Locale;
  title: string;
  heading: string;
  number: string;
  seller: InvoiceParty;
  customer: InvoiceParty;
  detailsHeading: string;
  details: readonly (readonly [string, string])[];
}): string {
  const m = messagesFor(document.locale);
  return `<!doctype html>
<html lang="${document.locale}">
<head>
  <meta charset="utf-8">
  <title>${escapeHtml(document.title)}</title>
  <style>${INVOICE_STYLE}</style>
</head>
<body>
  <header>
    <div>
      <p class="name">${escapeHtml(document.seller.name)}</p>
    </div>
    <div>
      <h1>${escapeHtml(document.heading)}</h1>
      <p class="num">${escapeHtml(document.number)}</p>
    </div>
  </header>
  <div class="parties">
    ${party(m.from, document.seller, m)}
    ${party(m.billTo, document.customer, m)}
    <section class="party">
      <h2>${escapeHtml(document.detailsHeading)}</h2>
      <dl class="details">
        ${document.details.map(([label, value]) => `<dt>${escapeHtml(label)}</dt><dd>${value}</dd>`).join('\n        ')}
      </dl>
    </section>
  </div>`;
}

export function renderInvoiceHtml({
  locale,
  invoice,
  seller,
  customer,
  subtotal,
  taxLines,
  overdue,
  amountDue,
  creditNotes = [],
}: PrintableInvoice): string {
  const m = messagesFor(locale);
  const amount = (value: string) => escapeHtml(displayAmount(value, locale, invoice.currency));
  const money = (value: string) => escapeHtml(displayMoney(value, invoice.currency, locale));
  const date = (value: string) => escapeHtml(displayDate(value, locale));
  const currency = escapeHtml(invoice.currency);
  const status = `${escapeHtml(m.invoiceStatus[invoice.status])}${overdue ? ` <span class="overdue">${escapeHtml(m.overdue)}</span>` : ''}`;
  const rows = invoice.items
    .map(
      (item) => `<tr>
          <td>${escapeHtml(item.description)}</td>
          <td class="num">${escapeHtml(displayQuantity(item.quantity, locale))}</td>
          <td class="num">${amount(item.unit_price)}</td>
          <td>${escapeHtml(item.tax_type ?? '—')}</td>
          <td class="num">${amount(item.tax_amount)}</td>
          <td class="num">${amount(item.line_total_pre_tax)}</td>
        </tr>`,
    )
    .join('\n        ');
  const refunded = parseMoney(invoice.amount_refunded) !== 0n;
  return `${documentOpening({
    locale,
    title: m.documentTitle(invoice.invoice_number),
    heading: m.invoiceTitle,
    number: invoice.invoice_number,
    seller,
    customer,
    detailsHeading: m.invoiceDetails,
    details: [
      [m.invoiceNumber, escapeHtml(invoice.invoice_number)],
      [m.invoiceDate, date(invoice.invoice_date)],
      [m.dueDate, date(invoice.due_date)],
      [
        m.period,
        escapeHtml(
          m.periodRange(displayDate(invoice.period_start, locale), displayDate(invoice.period_end, locale)),
        ),
      ],
      [m.status, status],
      [m.currency, currency],
    ],
  })}
  <table class="items">
    <thead>
      <tr>
        <th>${escapeHtml(m.description)}</th><th class="num">${escapeHtml(m.quantity)}</th><th class="num">${escapeHtml(m.unitPrice)}</th>
        <th>${escapeHtml(m.taxType)}</th><th class="num">${escapeHtml(m.tax)}</th><th class="num">${escapeHtml(m.amount)}</th>
      </tr>
    </thead>
    <tbody>
        ${rows}
    </tbody>
  </table>
  <table class="totals">
    <tr><td>${escapeHtml(m.subtotal)}</td><td class="num">${money(subtotal)}</td></tr>
    ${taxLines.map((line) => `<tr><td>${escapeHtml(m.taxNames[line.name] ?? line.name)}</td><td class="num">${money(line.amount)}</td></tr>`).join('\n    ')}
    <tr><td>${escapeHtml(taxLines.length > 0 ? m.totalTax : m.tax)}</td><td class="num">${money(invoice.tax_amount)}</td></tr>
    <tr class="grand"><td>${escapeHtml(m.total)}</td><td class="num">${money(invoice.total)}</td></tr>
    <tr><td>${escapeHtml(m.paid)}</td><td class="num">${money(invoice.amount_paid)}</td></tr>
    ${refunded ? `<tr><td>${escapeHtml(m.refunded)}</td><td class="num">${money(invoice.amount_refunded)}</td></tr>` : ''}
    <tr class="grand"><td>${escapeHtml(m.balanceDue)}</td><td class="num">${money(amountDue)}</td></tr>
  </table>
  ${
    creditNotes.length === 0
      ? ''
      : `<section class="credit-notes">
    <h2>${escapeHtml(m.creditNotes)}</h2>
    <table>
      <thead><tr><th>${escapeHtml(m.creditNoteNumber)}</th><th>${escapeHtml(m.creditNoteDate)}</th><th class="num">${escapeHtml(m.totalCredited)}</th></tr></thead>
      <tbody>
        ${creditNotes.map((note) => `<tr><td>${escapeHtml(note.number)}</td><td>${date(note.date)}</td><td class="num">${money(note.total)}</td></tr>`).join('\n        ')}
      </tbody>
    </table>
  </section>`
  }
  <footer>
    <p>${escapeHtml(m.documentFootnote(invoice.currency))}</p>
  </footer>
</body>
</html>
`;
}

/** A self-contained printable credit note (inline CSS, no script), the same content as its PDF. */
export function renderCreditNoteHtml({
  locale,
  note,
  invoice,
  seller,
  customer,
}: PrintableCreditNote): string {
  const m = messagesFor(locale);
  const amount = (value: string) => escapeHtml(displayAmount(value, locale, note.currency));
  const money = (value: string) => escapeHtml(displayMoney(value, note.currency, locale));
  const date = (value: string) => escapeHtml(displayDate(value, locale));
  const rows = note.lines
    .map(
      (line) => `<tr>
          <td>${escapeHtml(line.description)}</td>
          <td class="num">${amount(line.tax_amount)}</td>
          <td class="num">${amount(line.amount)}</td>
        </tr>`,
    )
    .join('\n        ');
  const taxes = note.tax_lines
    .map((line) => {
      const name = taxNameOf(line.name);
      return `<tr><td>${escapeHtml(m.taxNames[name] ?? name)}</td><td class="num">${money(line.amount)}</td></tr>`;
    })
    .join('\n    ');
  return `${documentOpening({
    locale,
    title: m.creditNoteDocumentTitle(note.number),
    heading: m.creditNoteTitle,
    number: note.number,
    seller,
    customer,
    detailsHeading: m.creditNoteDetails,
    details: [
      [m.creditNoteNumber, escapeHtml(note.number)],
      [m.creditNoteDate, date(note.created_at.slice(0, 10))],
      [m.creditedInvoice, `${escapeHtml(invoice.invoice_number)} (${date(invoice.invoice_date)})`],
      [m.reason, escapeHtml(m.creditNoteReasons[note.reason] ?? note.reason)],
      [m.currency, escapeHtml(note.currency)],
    ],
  })}
  ${note.memo ? `<p class="memo"><strong>${escapeHtml(m.memo)}:</strong> ${escapeHtml(note.memo)}</p>` : ''}
  <table class="items">
    <thead>
      <tr>
        <th>${escapeHtml(m.description)}</th><th class="num">${escapeHtml(m.tax)}</th><th class="num">${escapeHtml(m.amount)}</th>
      </tr>
    </thead>
    <tbody>
        ${rows}
    </tbody>
  </table>
  <table class="totals">
    <tr><td>${escapeHtml(m.subtotal)}</td><td class="num">${money(note.subtotal)}</td></tr>
    ${taxes}
    <tr><td>${escapeHtml(note.tax_lines.length > 0 ? m.totalTax : m.tax)}</td><td class="num">${money(note.tax)}</td></tr>
    <tr class="grand"><td>${escapeHtml(m.totalCredited)}</td><td class="num">${money(note.total)}</td></tr>
    <tr><td>${escapeHtml(m.appliedToInvoice)}</td><td class="num">${money(note.applied_to_invoice)}</td></tr>
    <tr><td>${escapeHtml(m.creditedToAccount)}</td><td class="num">${money(note.credited_to_customer)}</td></tr>
  </table>
  <footer>
    <p>${escapeHtml(m.creditNoteFootnote(note.currency))}</p>
  </footer>
</body>
</html>
`;
}
