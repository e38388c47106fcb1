import { createApiKey } from '../auth/index.js';
import type { CommonConfig } from '../config/index.js';
import { createCustomer } from '../customers/index.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../log/index.js';
import { createOrganization } from '../organizations/index.js';
import { CreateCustomer } from '../schemas/index.js';
import { openUsageEventLog, type UsageEventRecord } from '../usage/index.js';
import { seedBillingDemo } from './billing-demo.js';
import { demoCustomer, ORGANIZATION_NAMES, prng } from './demo-data.js';

export interface SeededOrganization {
  id: number;
  name: string;
  api_key: string;
}

export const CUSTOMERS_PER_ORG = 64;
const PUBLISH_CHUNK = 1000;

/**
 * Demo data through the same domain functions the API and console use (never raw inserts), so
 * it obeys every rule. Each organization is seeded in one transaction: all or nothing, and few
 * round trips on the embedded database. Its usage events then go to `publishUsage` (the usage
 * log of the process's mode, as accepted events do), so ClickHouse holds them as Postgres does.
 */
export async function seedDemoData(
  db: Database,
  options: {
    orgs: number;
    publishUsage: ((events: UsageEventRecord[]) => Promise<void>) | undefined;
    progress?: (message: string) => void;
    now?: Date;
  },
): Promise<SeededOrganization[]> {
  const progress = options.progress ?? (() => {});
  const now = options.now ?? new Date();
  const seeded: SeededOrganization[] = [];
  for (let n = 0; n < options.orgs; n++) {
    const name = `${ORGANIZATION_NAMES[n % ORGANIZATION_NAMES.length]}${n >= ORGANIZATION_NAMES.length ? ` ${n + 1}` : ''}`;
    progress(`seeding organization ${n + 1}/${options.orgs}: ${name}`);
    const { organization, counts, usage } = await db.transaction(async (tx) => {
      const org = await createOrganization(tx, { name });
      const key = await createApiKey(tx, { orgId: org.id, name: 'demo', environment: 'test' });
      const random = prng(org.id * 1000 + 7);
      const customers: { id: number; country: string }[] = [];
      for (let i = 0; i < CUSTOMERS_PER_ORG; i++) {
        const customer = await createCustomer(tx, org.id, CreateCustomer.parse(demoCustomer(random, i)));
        customers.push({ id: customer.id, country: customer.country });
      }
      const { counts, usage } = await seedBillingDemo(tx, org.id, customers, { now, random });
      return { organization: { id: org.id, name: org.name, api_key: key.api_key }, counts, usage };
    });
    if (options.publishUsage) {
      for (let at = 0; at < usage.length; at += PUBLISH_CHUNK) {
        await options.publishUsage(usage.slice(at, at + PUBLISH_CHUNK));
      }
    }
    progress(
      `  ${CUSTOMERS_PER_ORG} customers, ${counts.products} products, ${counts.subscriptions} subscriptions, ` +
        `${counts.usage_events} usage events, ${counts.invoices} invoices`,
    );
    seeded.push(organization);
  }
  return seeded;
}

/**
 * seedDemoData with each organization's usage published through the usage log of `config`'s mode
 * (Kafka to both sinks, or the in-process log to Postgres and ClickHouse), which is reached
 * before anything is written: a seed never commits data whose usage it cannot publish.
 */
export async function seedDemo(
  db: Database,
  options: { config: CommonConfig; log: Logger; orgs: number; progress?: (message: string) => void },
): Promise<SeededOrganization[]> {
  const progress = options.progress ? { progress: options.progress } : {};
  if (!options.config.KAFKA_BROKERS && !options.config.CLICKHOUSE_URL) {
    // The usage log's one store is then Postgres, which the seed's own transaction writes.
    return seedDemoData(db, { orgs: options.orgs, ...progress, publishUsage: undefined });
  }
  const { eventLog, clickhouse } = await openUsageEventLog(options.config, db, options.log);
  try {
    for (const check of eventLog.checks()) await check.probe();
    return await seedDemoData(db, {
      orgs: options.orgs,
      ...progress,
      publishUsage: async (events) => {
        await eventLog.append(events);
      },
    });
  } finally {
    await eventLog.close();
    await clickhouse?.close();
  }
}
