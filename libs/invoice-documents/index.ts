export {
  escapeHtml,
  INVOICE_HTML_HEADERS,
  INVOICE_STYLE_SOURCE,
  renderCreditNoteHtml,
  renderInvoiceHtml,
} from './html.js';
export { invoicePdfFilename, renderCreditNotePdf, renderInvoicePdf, toWinAnsi } from './pdf.js';
export {
  creditNotePdfFilename,
  loadPrintableCreditNote,
  type PrintableCreditNote,
} from './printable-credit-note.js';
export {
  amountDueOf,
  type InvoiceParty,
  isOverdue,
  loadPrintableInvoice,
  type PrintableInvoice,
} from './printable-invoice.js';
