export {
  atBilledTerms,
  type BilledTerms,
  billedTermsOf,
  itemForPeriod,
  type PendingProrationLine,
  pendingProrationLines,
  usageWindow,
} from './billable-items.js';
export {
  fitsAnInvoice,
  fixedChargeProblems,
  InvoiceLimitError,
  MAX_STORED_MONEY,
  productPriceProblems,
} from './invoice-limits.js';
export { type InvoiceLine, shareOut } from './invoice-lines.js';
export {
  formatInvoiceNumber,
  insertInvoiceLines,
  insertInvoices,
  type NewInvoice,
  reserveInvoiceNumbers,
} from './invoice-store.js';
export {
  type BilledPeriod,
  type LateUsageLine,
  lateUsageLine,
  periodAmount,
  periodLabel,
} from './late-usage.js';
export { composePeriodInvoice, type PeriodInvoice, type PeriodInvoiceInput } from './period-invoice.js';
export { assertBillableCurrency, composing, UnbillableError } from './unbillable.js';
