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
  type ItemToShow,
  instantInput,
  moneyInput,
  PERIOD_MONTHS,
  parseInput,
  periodEndAfter,
  publicSubscriptionItem,
  quantityInput,
  subscriptionEventData,
  subscriptionUpdatedEventData,
  utcDate,
} from './domain/index.js';
export { fixedChargeProblems, productPriceProblems } from './invoices/index.js';
export {
  type ChangeReadRow,
  type ChangingSubscription,
  changeReadColumns,
  changesNothing,
  type ItemSetPlan,
  includedUnitsProblems,
  isMetered,
  itemSetWriteCtes,
  loadBillableItems,
  namedIds,
  type PlannedChange,
  periodicItemProblems,
  planChange,
  productProblems,
  type ResolvedEntry,
  type RuledProduct,
  type SubscriptionTerms,
  toChangeRead,
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
