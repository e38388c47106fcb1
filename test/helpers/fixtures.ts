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

const HOUR_MS = 3_600_000;
/** Longer than a test takes from its organization's first request to its last. */
const HOUR_END_MARGIN_MS = 10_000;

/**
 * An organization with one live API key, through the same functions the console uses. Given its
 * own hourly limit, it is made only once the hour has at least HOUR_END_MARGIN_MS left: the limit
 * counts in fixed UTC hours, and requests that straddled the top of one would be counted in two,
 * so the 429 a test expects would not come.
 */
export async function createTestOrg(
  db: Queryable,
  options: { name?: string; plan?: Plan; requestsPerHour?: number } = {},
): Promise<TestOrg> {
  const hourLeft = HOUR_MS - (Date.now() % HOUR_MS);
  if (options.requestsPerHour && hourLeft < HOUR_END_MARGIN_MS) {
    await new Promise((resolve) => setTimeout(resolve, hourLeft + 10));
  }
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
