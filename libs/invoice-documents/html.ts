import { parseMoney } from '../money/index.js';
import { formatAmount, formatQuantity } from './format.js';
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

/**
 * The headers the HTML document is served with: it needs no script, no remote resource and no
 * frame, so the policy forbids them; a value that escaped escaping could still not run.
 */
export const INVOICE_HTML_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'private, no-store',
} as const;

function party(title: string, who: InvoiceParty): string {
  const lines = [
    who.contactName ? `Attn: ${who.contactName}` : null,
    ...who.addressLines,
    who.email,
    who.taxId ? `Tax ID: ${who.taxId}` : null,
  ].filter((line): line is string => Boolean(line));
  return `<section class="party">
      <h2>${escapeHtml(title)}</h2>
      <p class="name">${escapeHtml(who.name)}</p>
      ${lines.map((line) => `<p>${escapeHtml(line)}</p>`).join('\n      ')}
    </section>`;
}

/** A self-contained printable invoice (inline CSS, no script), the same content as the PDF. */
export function renderInvoiceHtml({
  invoice,
  seller,
  customer,
  subtotal,
  taxLines,
  overdue,
}: PrintableInvoice): string {
  const money = (value: string) => escapeHtml(formatAmount(value));
  const currency = escapeHtml(invoice.currency);
  const status = `${escapeHtml(invoice.status)}${overdue ? ' <span class="overdue">OVERDUE</span>' : ''}`;
  const rows = invoice.items
    .map(
      (item) => `<tr>
          <td>${escapeHtml(item.description)}</td>
          <td class="num">${escapeHtml(formatQuantity(item.quantity))}</td>
          <td class="num">${money(item.unit_price)}</td>
          <td>${escapeHtml(item.tax_type ?? '—')}</td>
          <td class="num">${money(item.tax_amount)}</td>
          <td class="num">${money(item.line_total_pre_tax)}</td>
        </tr>`,
    )
    .join('\n        ');
  const refunded = parseMoney(invoice.amount_refunded) !== 0n;
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Invoice ${escapeHtml(invoice.invoice_number)}</title>
  <style>
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
  </style>
</head>
<body>
  <header>
    <div>
      <p class="name">${escapeHtml(seller.name)}</p>
    </div>
    <div>
      <h1>INVOICE</h1>
      <p class="num">${escapeHtml(invoice.invoice_number)}</p>
    </div>
  </header>
  <div class="parties">
    ${party('From', seller)}
    ${party('Bill to', customer)}
    <section class="party">
      <h2>Invoice details</h2>
      <dl class="details">
        <dt>Invoice number</dt><dd>${escapeHtml(invoice.invoice_number)}</dd>
        <dt>Invoice date</dt><dd>${escapeHtml(invoice.invoice_date)}</dd>
        <dt>Due date</dt><dd>${escapeHtml(invoice.due_date)}</dd>
        <dt>Period</dt><dd>${escapeHtml(invoice.period_start)} to ${escapeHtml(invoice.period_end)}</dd>
        <dt>Status</dt><dd>${status}</dd>
        <dt>Currency</dt><dd>${currency}</dd>
      </dl>
    </section>
  </div>
  <table class="items">
    <thead>
      <tr>
        <th>Description</th><th class="num">Quantity</th><th class="num">Unit price</th>
        <th>Tax type</th><th class="num">Tax</th><th class="num">Amount</th>
      </tr>
    </thead>
    <tbody>
        ${rows}
    </tbody>
  </table>
  <table class="totals">
    <tr><td>Subtotal</td><td class="num">${money(subtotal)} ${currency}</td></tr>
    ${taxLines.map((line) => `<tr><td>${escapeHtml(line.name)}</td><td class="num">${money(line.amount)} ${currency}</td></tr>`).join('\n    ')}
    <tr><td>${taxLines.length > 0 ? 'Total tax' : 'Tax'}</td><td class="num">${money(invoice.tax_amount)} ${currency}</td></tr>
    <tr class="grand"><td>Total</td><td class="num">${money(invoice.total)} ${currency}</td></tr>
    <tr><td>Paid</td><td class="num">${money(invoice.amount_paid)} ${currency}</td></tr>
    ${refunded ? `<tr><td>Refunded</td><td class="num">${money(invoice.amount_refunded)} ${currency}</td></tr>` : ''}
    <tr class="grand"><td>Balance due</td><td class="num">${money(invoice.balance)} ${currency}</td></tr>
  </table>
  <footer>
    <p>Amounts in ${currency}. Line amounts are before tax. The balance is the total less the amount paid.</p>
  </footer>
</body>
</html>
`;
}
