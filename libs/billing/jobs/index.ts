export { type BillingScheduler, CREDIT_EXPIRY_SWEEP_MS, startBillingScheduler } from './scheduler.js';
