import { createApiKey } from '../../libs/auth/index.js';
import type { Queryable } from '../../libs/db/index.js';
import { createOrganization, setRateLimitOverride } from '../../libs/organizations/index.js';
import type { Plan } from '../../libs/rate-limit/index.js';
import { recordCredentials } from './run-log.js';

export interface TestOrg {
  orgId: number;
  apiKey: string;
  keyId: number;
}

let orgCounter = 0;

/** An organization with one live API key, through the same functions the console uses. */
export async function createTestOrg(
  db: Queryable,
  options: { name?: string; plan?: Plan; requestsPerHour?: number } = {},
): Promise<TestOrg> {
  const org = await createOrganization(db, {
    name: options.name ?? `Test Org ${++orgCounter}`,
    plan: options.plan ?? 'scale',
  });
  if (options.requestsPerHour) await setRateLimitOverride(db, org.id, options.requestsPerHour);
  const key = await createApiKey(db, { orgId: org.id, name: 'test' });
  recordCredentials(key.api_key);
  return { orgId: org.id, apiKey: key.api_key, keyId: key.id };
}

export function bearer(apiKey: string): { authorization: string } {
  return { authorization: `Bearer ${apiKey}` };
}
