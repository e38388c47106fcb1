export { billedPeriodsAt, POSTED_STATUSES } from './billed-periods.js';
export { invoiceUntilEnd, runBilling, type UsageForTransaction, usageSource } from './billing-run.js';
export {
  type DueSubscription,
  loadSubscriptionSchedule,
  loadSubscriptionSchedules,
} from './billing-store.js';
export { postDraft, postDueGraceDrafts, rerateDirtyDrafts, rerateDraft } from './drafts.js';
export {
  type InvoiceInputs,
  type InvoiceTarget,
  loadInvoiceInputs,
  loadPeriodQuantities,
  periodInvoiceInput,
  usageKey,
} from './invoice-inputs.js';
export { BILLABLE_STATUSES, planBilling, type ScheduleStep } from './schedule.js';
