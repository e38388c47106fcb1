export { type BurnableGrant, type GrantUse, isUsable, planBurnDown } from './burn-down.js';
export {
  activateHeldGrant,
  expireCreditGrants,
  findGrantByReference,
  type GrantRow,
  getCreditGrant,
  insertGrant,
  listCreditGrants,
  lockCreditCustomer,
  lockGrant,
  lockGrantSoldBy,
  readActiveGrants,
  toBurnableGrant,
  toCreditGrant,
  voidHeldGrant,
} from './grants.js';
export {
  type CreditsOnPosting,
  creditsApplied,
  type PostingInvoice,
  planCreditsOnPosting,
  recordCreditsOnPosting,
} from './posting.js';
