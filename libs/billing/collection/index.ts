export {
  addPromotionalCredit,
  createCreditGrant,
  PREPAID_CREDITS_LINE,
  voidCreditGrant,
} from './credit-grants.js';
export { addCustomerCredit } from './customer-credit.js';
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
  planCreditMemo,
  recordPayment,
} from './payments.js';
export { assertPayableAmount, settleOnPosting, statusForAmountPaid } from './settlement.js';
