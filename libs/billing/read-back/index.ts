export { getCreditBalance } from './credit-balance.js';
export {
  getDailyUsage,
  getSubscriptionsUsage,
  getSubscriptionUsage,
  previewUpcomingInvoice,
} from './usage-read-back.js';
