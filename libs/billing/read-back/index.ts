export { getCreditBalance } from './credit-balance.js';
export {
  getDailyUsage,
  getSubscriptionsItemQuantities,
  getSubscriptionsUsage,
  getSubscriptionUsage,
  type PeriodQuantities,
  previewUpcomingInvoice,
} from './usage-read-back.js';
