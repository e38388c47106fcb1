import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCreditGrant,
  runBilling,
  startBillingScheduler,
  usageSource,
} from '../../libs/billing/index.js';
import { Database } from '../../libs/db/index.js';
import { createLogger } from '../../libs/log/index.js';
import { setOrganizationSettings } from '../../libs/organizations/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { readStoresOver } from '../helpers/read-stores.js';
import { basicCatalog, customerIn, invoicesOf, recordUsage, subscribe } from './fixtures.js';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('billing_scheduler');
});
afterAll(() => database.drop());

function capturingLogger() {
  const lines: { level: string; msg: string; time: string; billingRun?: { invoices_created: number } }[] = [];
  const log = createLogger({
    level: 'info',
    service: 'billing',
    destination: { write: (line: string) => lines.push(JSON.parse(line)) },
  });
  return { log, lines };
}

const until = async (condition: () => boolean | Promise<boolean>, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

/** Runs `before` ahead of every statement `db` sends, whether a query or a transaction. */
function beforeEachStatement(db: Database, before: () => void | Promise<void>): void {
  const query = db.query.bind(db);
  db.query = (async (text: string, values?: unknown[]) => {
    await before();
    return query(text, values);
  }) as typeof db.query;
  const transaction = db.transaction.bind(db);
  db.transaction = (async (fn, options) => {
    await before();
    return transaction(fn, options);
  }) as typeof db.transaction;
}

const config = {
  CLICKHOUSE_URL: undefined,
  CLICKHOUSE_DATABASE: 'billing',
  KAFKA_BROKERS: undefined,
  KAFKA_CLIENT_ID: 'billing',
  KAFKA_USAGE_TOPIC: 'usage.events',
  KAFKA_CONSUMER_GROUP_PREFIX: '',
};

/** A scheduler over `db` whose billing run is an hour off: only its expiry sweep runs, at once. */
function sweepingSoon(db: Database) {
  return startBillingScheduler({
    db,
    config,
    stores: readStoresOver(db),
    intervalSeconds: 3600,
    log: capturingLogger().log,
    firstRunDelayMs: 3_600_000,
    expirySweepMs: 1,
  });
}

/** A scheduler over the test database that records whose invoices or credit its jobs moved. */
function recordingMoves(timing: { firstRunDelayMs: number; expirySweepMs: number }) {
  const moved: { orgId: number; customerId: number }[] = [];
  const scheduler = startBillingScheduler({
    db: database.db,
    config,
    stores: readStoresOver(database.db),
    intervalSeconds: 3600,
    log: capturingLogger().log,
    ...timing,
    afterCustomersMoved: async (customers) => {
      moved.push(...customers);
    },
  });
  const hasMoved = (orgId: number, customerId: number) =>
    moved.some((c) => c.orgId === orgId && c.customerId === customerId);
  return { scheduler, hasMoved };
}

describe('billing on an interval (npm start)', () => {
  it('runs shortly after start, then on every interval, and stops cleanly', async () => {
    const { orgId } = await createTestOrg(database.db);
    const { seats } = await basicCatalog(database.db, orgId);
    const customerId = await customerIn(database.db, orgId);
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: new Date(Date.now() - 40 * 86_400_000),
    });
    const { log, lines } = capturingLogger();
    const scheduler = startBillingScheduler({
      db: database.db,
      config,
      stores: readStoresOver(database.db),
      intervalSeconds: 1,
      log,
      firstRunDelayMs: 10,
    });
    try {
      await until(() => lines.filter((l) => l.msg === 'billing run finished').length >= 2);
    } finally {
      await scheduler.stop();
    }
    const runs = lines.filter((l) => l.msg === 'billing run finished');
    expect(runs[0]!.billingRun!.invoices_created).toBe(1);
    expect(runs[1]!.billingRun!.invoices_created).toBe(0);
    // the next run comes an interval (1 s) after the one before ended, not sooner
    expect(Date.parse(runs[1]!.time) - Date.parse(runs[0]!.time)).toBeGreaterThanOrEqual(990);
    expect(await invoicesOf(database.db, subscription.id)).toHaveLength(1);
    const count = lines.length;
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect(lines.length).toBe(count); // stopped: no more runs
  });

  it('posts a grace draft once its grace has passed, and re-rates drafts between runs', async () => {
    const { orgId } = await createTestOrg(database.db);
    await setOrganizationSettings(database.db, orgId, { invoiceGraceHours: 1 });
    const { seats, apiCalls } = await basicCatalog(database.db, orgId);
    const customerId = await customerIn(database.db, orgId);
    const start = new Date(Math.floor((Date.now() - 40 * 86_400_000) / 86_400_000) * 86_400_000);
    const make = () =>
      subscribe(
        database.db,
        orgId,
        {
          customer_id: customerId,
          items: [{ product_id: seats }, { product_id: apiCalls }],
          start_date: start,
        },
        start,
      );
    const [due, waiting] = [await make(), await make()];
    const usage = usageSource(new PostgresUsageAggregator(database.db));
    const periodEnd = new Date(due.current_period_end);
    // the first: a draft whose grace ended long ago; the second: still in its grace (run an hour earlier)
    await runBilling(database.db, {
      usage,
      orgId,
      subscriptionIds: [due.id],
      now: new Date(periodEnd.getTime() + 1000),
    });
    await runBilling(database.db, {
      usage,
      orgId,
      subscriptionIds: [waiting.id],
      now: new Date(periodEnd.getTime() + 1000),
    });
    await database.db.query(
      "UPDATE invoices SET post_at = now() + interval '1 hour' WHERE subscription_id = $1",
      [waiting.id],
    );
    const metered = waiting.items.find((item) => item.usage_type === 'metered')!.id;
    await recordUsage(
      database.db,
      orgId,
      metered,
      '12',
      new Date(start.getTime() + 86_400_000).toISOString(),
    );
    const { scheduler, hasMoved } = recordingMoves({ firstRunDelayMs: 3_600_000, expirySweepMs: 50 });
    try {
      await until(async () => (await invoicesOf(database.db, due.id))[0]!.status === 'POSTED');
      // what a customer owes moved: its automatic top-ups and alerts are looked at
      await until(() => hasMoved(orgId, customerId));
      await until(async () => (await invoicesOf(database.db, waiting.id))[0]!.total !== '10.00000000');
    } finally {
      await scheduler.stop();
    }
    const [draft] = await invoicesOf(database.db, waiting.id);
    // Seats 10.00 + 12 calls at 1.00, ON 13 %: the draft re-rated, still in its grace
    expect([draft!.status, draft!.total]).toEqual(['DRAFT', '24.86000000']);
  });

  it('says whose invoices its billing run posted, so their top-ups are looked at', async () => {
    const { orgId } = await createTestOrg(database.db);
    const { seats } = await basicCatalog(database.db, orgId);
    const customerId = await customerIn(database.db, orgId);
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: new Date(Date.now() - 40 * 86_400_000),
    });
    // the drafts job and the expiry sweep an hour off: only the billing run says anything
    const { scheduler, hasMoved } = recordingMoves({ firstRunDelayMs: 10, expirySweepMs: 3_600_000 });
    try {
      await until(() => hasMoved(orgId, customerId));
    } finally {
      await scheduler.stop();
    }
    expect(await invoicesOf(database.db, subscription.id)).toHaveLength(1);
  });

  it('lapses a grant once its expiry has come, and says whose credit moved', async () => {
    const { orgId } = await createTestOrg(database.db);
    const customerId = await customerIn(database.db, orgId);
    const { grant } = await database.db.transaction((tx) =>
      createCreditGrant(tx, {
        customerId,
        orgId,
        input: { amount: '15.00', category: 'promotional', expires_at: '2099-01-01T00:00:00Z' },
      }),
    );
    await database.db.query(
      `UPDATE credit_grants SET effective_at = now() - interval '2 days', expires_at = now() - interval '1 second'
        WHERE id = $1`,
      [grant.id],
    );
    const { scheduler, hasMoved } = recordingMoves({ firstRunDelayMs: 3_600_000, expirySweepMs: 50 });
    try {
      await until(() => hasMoved(orgId, customerId));
    } finally {
      await scheduler.stop();
    }
    const { rows } = await database.db.query<{ status: string }>(
      'SELECT status FROM credit_grants WHERE id = $1',
      [grant.id],
    );
    expect(rows[0]!.status).toBe('EXPIRED');
  });

  it('holds an interval beyond what a timer can (~24.8 days) instead of running at once', async () => {
    const { log, lines } = capturingLogger();
    const scheduler = startBillingScheduler({
      db: database.db,
      config,
      stores: readStoresOver(database.db),
      intervalSeconds: 40 * 86_400,
      log,
      firstRunDelayMs: 10,
      expirySweepMs: 3_600_000,
    });
    try {
      await until(() => lines.some((l) => l.msg === 'billing run finished'));
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await scheduler.stop();
    }
    expect(lines.filter((l) => l.msg === 'billing run finished')).toHaveLength(1);
  });

  it('starts no job once stopped, not even after one that was running when stop() was called', async () => {
    const db = new Database(database.url, { poolSize: 2 });
    let statements = 0;
    let stopping: Promise<void> | undefined;
    let scheduler: ReturnType<typeof startBillingScheduler> | undefined;
    // stop() is called while a job's statement is in flight
    beforeEachStatement(db, () => {
      if (++statements === 3) stopping = scheduler!.stop();
    });
    try {
      scheduler = sweepingSoon(db);
      await until(() => stopping !== undefined);
      await stopping;
      const after = statements;
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(statements).toBe(after);
    } finally {
      await scheduler?.stop();
      await db.close();
    }
  });

  it('logs a failed run as an error and tries again on the next interval', async () => {
    const unreachable = new Database('postgres://postgres@127.0.0.1:1/nowhere', { poolSize: 1 });
    const { log, lines } = capturingLogger();
    const scheduler = startBillingScheduler({
      db: unreachable,
      config,
      stores: readStoresOver(unreachable),
      intervalSeconds: 1,
      log,
      firstRunDelayMs: 10,
    });
    try {
      await until(() => lines.filter((l) => l.msg === 'billing run failed').length >= 2);
    } finally {
      await scheduler.stop();
      await unreachable.close();
    }
    expect(lines.every((l) => l.level === 'error')).toBe(true);
  });

  it('stop() waits for the jobs in progress to end', async () => {
    const db = new Database(database.url, { poolSize: 2 });
    // every statement is held at a gate until released: the jobs that started are in progress
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered = 0;
    beforeEachStatement(db, async () => {
      entered++;
      await gate;
    });
    const scheduler = sweepingSoon(db);
    try {
      await until(() => entered > 0);
      let stopped = false;
      const stopping = scheduler.stop().then(() => {
        stopped = true;
      });
      // every promise that can settle without the gate has settled by then
      await new Promise((resolve) => setImmediate(resolve));
      expect(stopped).toBe(false);
      release();
      await stopping;
      expect(stopped).toBe(true);
    } finally {
      release();
      await scheduler.stop();
      await db.close();
    }
  });
});
