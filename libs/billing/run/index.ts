export { invoiceUntilEnd, runBilling, type UsageForTransaction, usageSource } from './billing-run.js';
export { startBillingScheduler } from './billing-scheduler.js';
export { type DueSubscription, loadCustomers, loadSubscriptionSchedule } from './billing-store.js';
export { BILLABLE_STATUSES, planBilling, type ScheduleStep } from './schedule.js';
