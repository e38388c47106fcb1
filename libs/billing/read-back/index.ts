export { getCreditBalance } from './credit-balance.js';
export { getDailyUsage, getSubscriptionUsage, getSubscriptionsUsage, previewUpcomingInvoice } from './usage-read-back.js';
