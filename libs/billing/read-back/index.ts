export { getDailyUsage, getSubscriptionUsage, previewUpcomingInvoice } from './usage-read-back.js';
