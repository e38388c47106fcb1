export {
  addCustomerCredit,
  applyDunning,
  createCreditGrant,
  createCreditMemo,
  createRefund,
  type MoneyInput,
  type MoneyResult,
  postInvoice,
  recordPayment,
  voidCreditGrant,
  withdrawInvoice,
} from './collection/index.js';
export {
  CREDITABLE_STATUSES,
  type CreditNoteFilter,
  type CreditNoteSummary,
  createCreditNote,
  creditNoteSummaries,
  getCreditNote,
  issueCreditNote,
  listCreditNotes,
  voidUsageWithCreditNote,
} from './credit-notes/index.js';
export { expireCreditGrants, getCreditGrant, listCreditGrants } from './credits/index.js';
export {
  addDaysToInstant,
  addMonthsAnchored,
  assertSubscriptionTransition,
  canMoveInvoice,
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
export { fixedChargeProblems, productPriceProblems, UnbillableError } from './invoices/index.js';
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
  usageLimitProblems,
} from './item-set/index.js';
export { type BillingScheduler, startBillingScheduler } from './jobs/index.js';
export { type BillableItem, tierProblems } from './pricing/index.js';
export {
  getCreditBalance,
  getDailyUsage,
  getSubscriptionsItemQuantities,
  getSubscriptionsUsage,
  getSubscriptionUsage,
  type PeriodQuantities,
  previewUpcomingInvoice,
} from './read-back/index.js';
export {
  BILLABLE_STATUSES,
  invoiceUntilEnd,
  loadSubscriptionSchedule,
  postDraft,
  postDueGraceDrafts,
  rerateDirtyDrafts,
  rerateDraft,
  runBilling,
  type UsageForTransaction,
  usageSource,
} from './run/index.js';
export { computeTax, federalGstOf, federalGstOfSubtotal, taxRuleFor } from './tax/index.js';
export { checkTopUps, getCreditTopUp, setCreditTopUp } from './top-up/index.js';
