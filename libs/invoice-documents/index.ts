import type { PrintableCreditNote } from './printable-credit-note.js';
import type { PrintableInvoice } from './printable-invoice.js';

export {
  escapeHtml,
  INVOICE_HTML_HEADERS,
  INVOICE_STYLE_SOURCE,
  renderCreditNoteHtml,
  renderInvoiceHtml,
} from './html.js';
export {
  creditNotePdfFilename,
  loadPrintableCreditNote,
  type PrintableCreditNote,
} from './printable-credit-note.js';
export {
  amountDueOf,
  type InvoiceParty,
  invoicePdfFilename,
  loadPrintableInvoice,
  type PrintableInvoice,
} from './printable-invoice.js';

/*
 * PDFs are drawn with pdfkit and fontkit, loaded with the first PDF a process renders: most
 * processes never render one, and would otherwise pay for loading and holding the two libraries'
 * code and tables at every start (docs/decisions.md).
 */
const pdf = () => import('./pdf.js');

export async function renderInvoicePdf(printable: PrintableInvoice): Promise<Buffer> {
  return (await pdf()).renderInvoicePdf(printable);
}

export async function renderCreditNotePdf(printable: PrintableCreditNote): Promise<Buffer> {
  return (await pdf()).renderCreditNotePdf(printable);
}
