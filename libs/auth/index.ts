export { ApiKeyAuthenticator, type AuthContext } from './authenticator.js';
export {
  type ApiKeySummary,
  type CreatedApiKey,
  createApiKey,
  listApiKeys,
  revokeApiKey,
} from './key-management.js';
export { bearerToken, generateApiKey, hashApiKey, looksLikeApiKey } from './keys.js';
