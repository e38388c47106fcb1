export {
  CREDITABLE_STATUSES,
  type CreditNoteFilter,
  type CreditNoteRequest,
  type CreditNoteSummary,
  createCreditNote,
  creditNoteSummaries,
  getCreditNote,
  listCreditNotes,
} from './credit-notes.js';
export { invoiceTaxComponents, noteTax, type TaxComponentAmount } from './tax-reversal.js';
export { voidUsageWithCreditNote } from './usage-correction.js';
