export { invoiceUntilEnd, runBilling, type UsageForTransaction, usageSource } from './billing-run.js';
export {
  type BillableItemRow,
  billableItemsSql,
  type DueSubscription,
  loadBillableItems,
  loadCustomers,
  loadSubscriptionSchedule,
  toBillableItem,
} from './billing-store.js';
export { BILLABLE_STATUSES, planBilling, type ScheduleStep } from './schedule.js';
