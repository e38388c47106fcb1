export {
  createOrganization,
  getOrganization,
  type Organization,
  setPlan,
  setRateLimitOverride,
} from './organizations.js';
