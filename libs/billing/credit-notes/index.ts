export {
  CREDITABLE_STATUSES,
  type CreditNoteFilter,
  type CreditNoteRequest,
  createCreditNote,
  formatCreditNoteNumber,
  getCreditNote,
  listCreditNotes,
} from './credit-notes.js';
export { invoiceTaxComponents, noteTax, type TaxComponentAmount } from './tax-reversal.js';
