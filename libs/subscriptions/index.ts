export {
  cancelSubscription,
  createSubscription,
  NewSubscription,
  NewSubscriptionItem,
} from './subscription-lifecycle.js';
export { getSubscription, listSubscriptions, type SubscriptionFilter } from './subscriptions.js';
