export { applyItemSet } from './apply-item-set.js';
export {
  includedUnitsProblems,
  isMetered,
  periodicItemProblems,
  productProblems,
  type RuledProduct,
  type SubscriptionTerms,
  usageLimitProblems,
} from './item-rules.js';
export type { ChangingSubscription, ResolvedEntry } from './item-set.js';
export {
  type ChangeReadRow,
  changeReadColumns,
  itemSetWriteCtes,
  loadBillableItems,
  loadBillableItemsSince,
  loadItemsById,
  namedIds,
  toChangeRead,
} from './item-set-store.js';
export { type PlannedChange, planChange } from './plan-change.js';
export { changesNothing, endItemsAt, type ItemSetPlan } from './plan-item-set.js';
