export { changeSubscription } from './subscription-changes.js';
export {
  cancelSubscription,
  createSubscription,
  NewSubscription,
  NewSubscriptionItem,
  unparkSubscription,
} from './subscription-lifecycle.js';
export { getSubscription, listSubscriptions, type SubscriptionFilter } from './subscriptions.js';
