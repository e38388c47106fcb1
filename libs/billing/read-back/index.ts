export { getCreditBalance } from './credit-balance.js';
export { getDailyUsage, getSubscriptionUsage, previewUpcomingInvoice } from './usage-read-back.js';
