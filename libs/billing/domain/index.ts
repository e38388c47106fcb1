export {
  invoiceEventData,
  paymentEventData,
  subscriptionEventData,
  subscriptionUpdatedEventData,
} from './event-data.js';
export { instantInput, moneyInput, parseAmount, parseInput, quantityInput } from './inputs.js';
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
  assertInvoiceTransition,
  assertSubscriptionTransition,
  canMoveInvoice,
} from './state-machines.js';
export { type ItemToShow, publicSubscriptionItem } from './subscription-item.js';
