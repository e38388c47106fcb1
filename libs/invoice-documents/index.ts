export { escapeHtml, INVOICE_HTML_HEADERS, renderInvoiceHtml } from './html.js';
export { invoicePdfFilename, renderInvoicePdf, toWinAnsi } from './pdf.js';
export {
  type InvoiceParty,
  isOverdue,
  loadPrintableInvoice,
  type PrintableInvoice,
} from './printable-invoice.js';
