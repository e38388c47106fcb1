export {
  CREDITABLE_STATUSES,
  type CreditNoteFilter,
  type CreditNoteRequest,
  type CreditNoteSummary,
  creditNoteSummaries,
  getCreditNote,
  listCreditNotes,
} from './credit-notes.js';
export { createCreditNote, issueCreditNote } from './issue.js';
export { invoiceTaxComponents, noteTax, type TaxComponentAmount } from './tax-reversal.js';
export { voidUsageWithCreditNote } from './usage-correction.js';
