export { getSubscription, listSubscriptions, type SubscriptionFilter } from './subscriptions.js';
