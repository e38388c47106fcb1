export { ApiKeyAuthenticator, type AuthContext } from './authenticator.js';
export { type CreatedApiKey, createApiKey, revokeApiKey } from './key-management.js';
export { bearerToken, generateApiKey, hashApiKey, looksLikeApiKey } from './keys.js';
