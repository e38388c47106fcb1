export { escapeHtml, INVOICE_HTML_HEADERS, INVOICE_STYLE_SOURCE, renderInvoiceHtml } from './html.js';
export { invoicePdfFilename, renderInvoicePdf, toWinAnsi } from './pdf.js';
export {
  amountDueOf,
  type InvoiceParty,
  isOverdue,
  loadPrintableInvoice,
  type PrintableInvoice,
} from './printable-invoice.js';
