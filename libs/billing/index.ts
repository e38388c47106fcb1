export {
  addCustomerCredit,
  applyDunning,
  createCreditMemo,
  createRefund,
  type MoneyInput,
  type MoneyResult,
  postInvoice,
  recordPayment,
  withdrawInvoice,
} from './collection/index.js';
export {
  addDaysToInstant,
  addMonthsAnchored,
  assertSubscriptionTransition,
  instantInput,
  moneyInput,
  PERIOD_MONTHS,
  parseInput,
  periodEndAfter,
  quantityInput,
  subscriptionEventData,
  subscriptionUpdatedEventData,
  utcDate,
} from './domain/index.js';
export { fixedChargeProblems, productPriceProblems } from './invoices/index.js';
export {
  type BillableItemRow,
  billableItemsSql,
  type ChangeCatalogRow,
  type ChangeMode,
  type ChangingSubscription,
  changeCatalogColumns,
  type ItemSetPlan,
  itemSetWriteCtes,
  loadBillableItems,
  namedIds,
  planItemSet,
  type ResolvedEntry,
  resolveItemSet,
  toBillableItem,
  toChangeCatalog,
} from './item-set/index.js';
export { type BillableItem, tierProblems } from './pricing/index.js';
export { getDailyUsage, getSubscriptionUsage, previewUpcomingInvoice } from './read-back/index.js';
export {
  BILLABLE_STATUSES,
  invoiceUntilEnd,
  loadSubscriptionSchedule,
  runBilling,
  startBillingScheduler,
  type UsageForTransaction,
  usageSource,
} from './run/index.js';
export { computeTax, federalGstOf, federalGstOfSubtotal, taxRuleFor } from './tax/index.js';
