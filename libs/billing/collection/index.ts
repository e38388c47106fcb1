export { addCustomerCredit, applyCredits, type CreditApplication } from './customer-credit.js';
export { applyDunning, restoreIfSettled } from './dunning.js';
export {
  type InvoiceRef,
  type LockedInvoice,
  lockInvoice,
  postInvoice,
  withdrawInvoice,
} from './invoice-operations.js';
export {
  createCreditMemo,
  createRefund,
  type MoneyInput,
  type MoneyResult,
  recordPayment,
} from './payments.js';
export { settleOnPosting } from './settlement.js';
