import { createApiKey } from '../auth/index.js';
import { createCustomer } from '../customers/index.js';
import type { Database } from '../db/index.js';
import { createOrganization } from '../organizations/index.js';
import { CreateCustomer } from '../schemas/index.js';
import { seedBillingDemo } from './billing-demo.js';
import { demoCustomer, ORGANIZATION_NAMES, prng } from './demo-data.js';

export interface SeededOrganization {
  id: number;
  name: string;
  api_key: string;
}

export const CUSTOMERS_PER_ORG = 64;

/**
 * Demo data through the same domain functions the API and console use (never raw inserts), so
 * it obeys every rule. Each organization is seeded in one transaction: all or nothing, and few
 * round trips on the embedded database.
 */
export async function seedDemoData(
  db: Database,
  options: { orgs: number; progress?: (message: string) => void; now?: Date },
): Promise<SeededOrganization[]> {
  const progress = options.progress ?? (() => {});
  const now = options.now ?? new Date();
  const seeded: SeededOrganization[] = [];
  for (let n = 0; n < options.orgs; n++) {
    const name = `${ORGANIZATION_NAMES[n % ORGANIZATION_NAMES.length]}${n >= ORGANIZATION_NAMES.length ? ` ${n + 1}` : ''}`;
    progress(`seeding organization ${n + 1}/${options.orgs}: ${name}`);
    const { organization, counts } = await db.transaction(async (tx) => {
      const org = await createOrganization(tx, { name });
      const key = await createApiKey(tx, { orgId: org.id, name: 'demo', environment: 'test' });
      const random = prng(org.id * 1000 + 7);
      const customers: { id: number; country: string }[] = [];
      for (let i = 0; i < CUSTOMERS_PER_ORG; i++) {
        const customer = await createCustomer(tx, org.id, CreateCustomer.parse(demoCustomer(random, i)));
        customers.push({ id: customer.id, country: customer.country });
      }
      const counts = await seedBillingDemo(tx, org.id, customers, { now, random });
      return { organization: { id: org.id, name: org.name, api_key: key.api_key }, counts };
    });
    progress(
      `  ${CUSTOMERS_PER_ORG} customers, ${counts.products} products, ${counts.subscriptions} subscriptions, ` +
        `${counts.usage_events} usage events, ${counts.invoices} invoices`,
    );
    seeded.push(organization);
  }
  return seeded;
}
