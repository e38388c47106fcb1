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
export { fixedChargeProblems, productPriceProblems, UnbillableError } from './invoices/index.js';
export {
  type ChangeCatalogRow,
  type ChangeMode,
  type ChangingSubscription,
  changeCatalogColumns,
  type ItemSetPlan,
  itemSetWriteCtes,
  namedIds,
  planItemSet,
  type ResolvedEntry,
  resolveItemSet,
  toChangeCatalog,
} from './item-set/index.js';
export { type BillableItem, tierProblems } from './pricing/index.js';
export { getDailyUsage, getSubscriptionUsage, previewUpcomingInvoice } from './read-back/index.js';
export {
  BILLABLE_STATUSES,
  type BillableItemRow,
  billableItemsSql,
  invoiceUntilEnd,
  loadBillableItems,
  loadSubscriptionSchedule,
  runBilling,
  startBillingScheduler,
  toBillableItem,
  type UsageForTransaction,
  usageSource,
} from './run/index.js';
export { computeTax, federalGstOf, federalGstOfSubtotal, taxRuleFor } from './tax/index.js';
