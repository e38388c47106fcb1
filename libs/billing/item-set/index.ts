export { applyItemSet } from './apply-item-set.js';
export type { ChangeMode, ChangingSubscription, ResolvedEntry } from './item-set.js';
export {
  type BillableItemRow,
  billableItemsSql,
  type ChangeCatalogRow,
  changeCatalogColumns,
  itemSetWriteCtes,
  loadBillableItems,
  namedIds,
  toBillableItem,
  toChangeCatalog,
} from './item-set-store.js';
export { endItemsAt, type ItemSetPlan, planItemSet } from './plan-item-set.js';
export { resolveItemSet } from './resolve-item-set.js';
