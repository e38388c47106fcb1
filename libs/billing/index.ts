export {
  type BillingRunOptions,
  type BillingRunSummary,
  DEFAULT_BATCH_SIZE,
  invoiceUntilEnd,
  runBilling,
  type SubscriptionEnd,
  type UsageForTransaction,
  usageSource,
} from './billing-run.js';
export { type BillingScheduler, startBillingScheduler } from './billing-scheduler.js';
export {
  type BillableItemRow,
  billableItemsSql,
  loadBillableItems,
  loadSubscriptionSchedule,
  toBillableItem,
} from './billing-store.js';
export { addCustomerCredit } from './customer-credit.js';
export { applyDunning } from './dunning.js';
export {
  invoiceEventData,
  paymentEventData,
  subscriptionEventData,
  subscriptionUpdatedEventData,
} from './event-data.js';
export { instantInput, moneyInput, parseInput, quantityInput } from './inputs.js';
export {
  fitsAnInvoice,
  fixedChargeProblems,
  HIGHEST_TAX_RATE,
  productPriceProblems,
} from './invoice-limits.js';
export {
  type BillableItem,
  buildInvoiceLines,
  type InvoiceDraft,
  type InvoiceLine,
} from './invoice-lines.js';
export { type InvoiceRef, postInvoice, withdrawInvoice } from './invoice-operations.js';
export {
  type AppliedItemSet,
  applyItemSet,
  type ChangeCatalogRow,
  type ChangeMode,
  type ChangingSubscription,
  changeCatalogColumns,
  type ItemSetEntry,
  type ItemSetPlan,
  itemForPeriod,
  itemSetWriteCtes,
  namedIds,
  type PendingProrationLine,
  pendingProrationLines,
  planItemSet,
  type ResolvedEntry,
  resolveItemSet,
  toChangeCatalog,
  usageWindow,
} from './item-changes.js';
export {
  createCreditMemo,
  createRefund,
  type MoneyInput,
  type MoneyResult,
  recordPayment,
} from './payments.js';
export {
  composePeriodInvoice,
  type PeriodInvoice,
  type PeriodInvoiceCustomer,
  type PeriodInvoiceInput,
} from './period-invoice.js';
export {
  addDays,
  addDaysToInstant,
  addMonthsAnchored,
  invoicePeriodDates,
  PERIOD_MONTHS,
  periodEndAfter,
  utcDate,
} from './periods.js';
export {
  billableUsage,
  type PriceTier,
  type ProductPricing,
  priceQuantity,
  tierProblems,
} from './pricing.js';
export {
  blendIncludedUnits,
  type Period,
  type ProrationLine,
  proratedIncludedUnits,
  prorationLinesFor,
  secondsBetween,
} from './proration.js';
export { regionCode } from './regions.js';
export { BILLABLE_STATUSES, planBilling, type ScheduleStep, type SubscriptionSchedule } from './schedule.js';
export { parseAmount, settleOnPosting, statusAfterRefund, statusForAmountPaid } from './settlement.js';
export {
  assertInvoiceTransition,
  assertSubscriptionTransition,
  canMoveInvoice,
  canMoveSubscription,
  INVOICE_TRANSITIONS,
  SUBSCRIPTION_TRANSITIONS,
} from './state-machines.js';
export {
  CANADIAN_PROVINCES,
  computeTax,
  federalGstOf,
  federalGstOfSubtotal,
  type TaxComponent,
  type TaxComputation,
  type TaxDestination,
  type TaxLine,
  type TaxRule,
  taxRuleFor,
  US_STATE_RATES,
} from './tax.js';
export {
  type DailyUsageQuery,
  getDailyUsage,
  getSubscriptionUsage,
  MAX_DAILY_DAYS,
  portalUsageSource,
  previewUpcomingInvoice,
} from './usage-read-back.js';
