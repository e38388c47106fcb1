export {
  createOrganization,
  getOrganization,
  listOrganizations,
  MAX_INVOICE_GRACE_HOURS,
  type Organization,
  setOrganizationSettings,
  setPlan,
  setRateLimitOverride,
} from './organizations.js';
