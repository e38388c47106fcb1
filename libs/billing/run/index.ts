export { invoiceUntilEnd, runBilling, type UsageForTransaction, usageSource } from './billing-run.js';
export {
  type DueSubscription,
  loadSubscriptionSchedule,
  loadSubscriptionSchedules,
} from './billing-store.js';
export {
  type InvoiceInputs,
  type InvoiceTarget,
  loadInvoiceInputs,
  periodInvoiceInput,
} from './invoice-inputs.js';
export { BILLABLE_STATUSES, planBilling, type ScheduleStep } from './schedule.js';
