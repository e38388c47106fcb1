export {
  createOrganization,
  getOrganization,
  listOrganizations,
  type Organization,
  setPlan,
  setRateLimitOverride,
} from './organizations.js';
