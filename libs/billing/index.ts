export { regionCode } from '../regions/regions.js';
export { addCustomerCredit } from './collection/customer-credit.js';
export { applyDunning } from './collection/dunning.js';
export {
  createCreditMemo,
  createRefund,
  type MoneyInput,
  type MoneyResult,
  recordPayment,
} from './collection/payments.js';
export {
  parseAmount,
  settleOnPosting,
  statusAfterRefund,
  statusForAmountPaid,
} from './collection/settlement.js';
export {
  invoiceEventData,
  paymentEventData,
  subscriptionEventData,
  subscriptionUpdatedEventData,
} from './domain/event-data.js';
export { instantInput, moneyInput, parseInput, quantityInput } from './domain/inputs.js';
export {
  addDays,
  addDaysToInstant,
  addMonthsAnchored,
  invoicePeriodDates,
  PERIOD_MONTHS,
  periodEndAfter,
  utcDate,
} from './domain/periods.js';
export {
  assertInvoiceTransition,
  assertSubscriptionTransition,
  canMoveInvoice,
  canMoveSubscription,
  INVOICE_TRANSITIONS,
  SUBSCRIPTION_TRANSITIONS,
} from './domain/state-machines.js';
export {
  fitsAnInvoice,
  fixedChargeProblems,
  HIGHEST_TAX_RATE,
  productPriceProblems,
} from './invoices/invoice-limits.js';
export {
  type BillableItem,
  buildInvoiceLines,
  type InvoiceDraft,
  type InvoiceLine,
} from './invoices/invoice-lines.js';
export { type InvoiceRef, postInvoice, withdrawInvoice } from './invoices/invoice-operations.js';
export {
  composePeriodInvoice,
  type PeriodInvoice,
  type PeriodInvoiceCustomer,
  type PeriodInvoiceInput,
} from './invoices/period-invoice.js';
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
} from './item-set/item-changes.js';
export {
  billableUsage,
  type PriceTier,
  type ProductPricing,
  priceQuantity,
  tierProblems,
} from './pricing/pricing.js';
export {
  blendIncludedUnits,
  type Period,
  type ProrationLine,
  proratedIncludedUnits,
  prorationLinesFor,
  secondsBetween,
} from './pricing/proration.js';
export {
  type DailyUsageQuery,
  getDailyUsage,
  getSubscriptionUsage,
  MAX_DAILY_DAYS,
  portalUsageSource,
  previewUpcomingInvoice,
} from './read-back/usage-read-back.js';
export {
  type BillingRunOptions,
  type BillingRunSummary,
  DEFAULT_BATCH_SIZE,
  invoiceUntilEnd,
  runBilling,
  type SubscriptionEnd,
  type UsageForTransaction,
  usageSource,
} from './run/billing-run.js';
export { type BillingScheduler, startBillingScheduler } from './run/billing-scheduler.js';
export {
  type BillableItemRow,
  billableItemsSql,
  loadBillableItems,
  loadSubscriptionSchedule,
  toBillableItem,
} from './run/billing-store.js';
export {
  BILLABLE_STATUSES,
  planBilling,
  type ScheduleStep,
  type SubscriptionSchedule,
} from './run/schedule.js';
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
} from './tax/tax.js';
