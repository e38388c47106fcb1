/**
 * `npm run bench:billing-run`: BENCH_SUBSCRIPTIONS subscriptions (default 10,000), one monthly
 * period due, half of them with a metered item whose usage (BENCH_EVENTS_PER_ITEM events each,
 * default 20) lives in ClickHouse, the aggregation port of the distributed mode. The billing run
 * is the console command in its own process (`bin/console.ts billing run`), exactly as cron runs
 * it, against real Postgres and ClickHouse. Bar (issue 5): the run completes in <= 60 s, and a
 * second run creates nothing.
 *
 * Scenarios:
 * - run: BENCH_CONCURRENT_RUNS processes at once (default 1) bill everything that is due;
 * - rerun: the same command again: nothing is due, so it measures the fixed cost of a run (process
 *   start, connections, one empty claim) and is the baseline the first run is compared with;
 * - run with proration lines (issue 24): the same data loaded again into a second database, where
 *   BENCH_PRORATION_SUBSCRIPTIONS of the subscriptions (default 2,000) had their seats changed
 *   mid-period (base terms recorded, a credit and a charge line waiting): bar, its run within 1.2x
 *   of the first run's;
 * - run with credit grants (issue 33): the same data again, where BENCH_GRANT_CUSTOMERS customers
 *   (default 5,000) hold 3 promotional grants each (priorities, expiries, one a usage-only grant;
 *   some used up by the run): bar, its run within 1.3x of the first run's; every grant's uses add
 *   up to its CREDIT_MEMOs.
 * - run with late usage (issue 34): the same data again, where the previous period of every
 *   metered subscription was invoiced and posted (its usage in Postgres, what it billed recorded
 *   and still to be compared, as every run leaves it) and BENCH_LATE_SUBSCRIPTIONS of them (default
 *   1,000) got late events of that period since: each of their invoices carries a late-usage line.
 *   Bar: its run within 1.2x of the first run's; every late event billed once.
 *
 * Settings (env): BENCH_SUBSCRIPTIONS, BENCH_METERED_SHARE (0.5), BENCH_EVENTS_PER_ITEM (20),
 * BENCH_CUSTOMERS (5,000), BENCH_BATCH_SIZE (the run's default), BENCH_CONCURRENT_RUNS (1),
 * BENCH_USAGE_STORE (clickhouse | postgres; default clickhouse), BENCH_TIMEOUT_SECONDS (300),
 * BENCH_RUN_PGOPTIONS (PGOPTIONS of the billing run processes only, for a statement profile),
 * BENCH_RUN_NODE_ARGS (node flags of the billing run processes only, e.g. --cpu-prof),
 * DATABASE_URL (an admin URL of the Postgres to use; a database bench_billing_run_<pid> is
 * created in it and dropped after), CLICKHOUSE_URL (default http://127.0.0.1:8123; a database of
 * the same name is created and dropped).
 */

import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createProduct } from '../../libs/catalog/index.js';
import { openClickHouse } from '../../libs/clickhouse/index.js';
import { Database, migrate } from '../../libs/db/index.js';
import { createOrganization } from '../../libs/organizations/index.js';
import {
  ClickHouseUsageSink,
  migrateClickHouse,
  PostgresUsageSink,
  type UsageEventRecord,
  type UsageSink,
} from '../../libs/usage/index.js';
import {
  cpuSeconds,
  createDatabase,
  dropDatabase,
  intEnv,
  logger,
  printBars,
  printTable,
  spawnEntry,
  writeReport,
} from '../support.js';

const settings = {
  subscriptions: intEnv('BENCH_SUBSCRIPTIONS', 10_000, 1),
  meteredShare: Number(process.env.BENCH_METERED_SHARE ?? 0.5),
  eventsPerItem: intEnv('BENCH_EVENTS_PER_ITEM', 20, 1),
  customers: intEnv('BENCH_CUSTOMERS', 5000, 1),
  batchSize: process.env.BENCH_BATCH_SIZE ? intEnv('BENCH_BATCH_SIZE', 200, 1) : undefined,
  concurrentRuns: intEnv('BENCH_CONCURRENT_RUNS', 1, 1),
  usageStore: (process.env.BENCH_USAGE_STORE ?? 'clickhouse') as 'clickhouse' | 'postgres',
  timeoutSeconds: intEnv('BENCH_TIMEOUT_SECONDS', 300, 1),
  clickhouseUrl: process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:8123',
  prorationSubscriptions: intEnv('BENCH_PRORATION_SUBSCRIPTIONS', 2000, 0),
  grantCustomers: intEnv('BENCH_GRANT_CUSTOMERS', 5000, 0),
  lateSubscriptions: intEnv('BENCH_LATE_SUBSCRIPTIONS', 1000, 0),
  // e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof": a CPU profile of each billing run process
  runNodeArgs: (process.env.BENCH_RUN_NODE_ARGS ?? '').split(' ').filter(Boolean),
};
const BAR_SECONDS = 60;
const BAR_PRORATION_RATIO = 1.2;
const BAR_GRANTS_RATIO = 1.3;
const BAR_LATE_RATIO = 1.2;

const databaseName = `bench_billing_run_${process.pid}`;
const prorationDatabaseName = `${databaseName}_proration`;
const grantsDatabaseName = `${databaseName}_grants`;
const lateDatabaseName = `${databaseName}_late`;
const log = logger('billing-run');
let db: Database | undefined;

try {
  await main();
} finally {
  await db?.close();
  await dropDatabase(databaseName, log);
  await dropDatabase(prorationDatabaseName, log);
  await dropDatabase(grantsDatabaseName, log);
  await dropDatabase(lateDatabaseName, log);
  if (settings.usageStore === 'clickhouse') {
    const clickhouse = openClickHouse({ url: settings.clickhouseUrl, database: databaseName });
    await clickhouse.command(`DROP DATABASE IF EXISTS ${databaseName}`).catch(() => {});
    await clickhouse.close();
  }
}

interface RunResult {
  scenario: string;
  processes: number;
  invoices: number;
  /** The run itself (summary.duration_ms of the slowest process). */
  runSeconds: number;
  /** Wall time of the process(es), start to exit. */
  wallSeconds: number;
  invoicesPerSecond: number;
  /** CPU seconds of the billing run process(es) and of their Postgres backends. */
  cpu: { run: number; postgres: number };
}

async function main(): Promise<void> {
  const url = await createDatabase(databaseName);
  db = new Database(url, { poolSize: 4, applicationName: 'bench-billing-run' });
  await migrate(db);

  const now = new Date();
  const periodStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
  const periodEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const loadStarted = Date.now();
  const { meteredItems } = await loadData(db, periodStart, periodEnd);
  const events = await loadUsage(meteredItems, periodStart, periodEnd);
  const loadSeconds = (Date.now() - loadStarted) / 1000;
  log(
    `loaded ${settings.subscriptions} subscriptions (${meteredItems.length} with a metered item), ` +
      `${events} usage events in ${settings.usageStore}, in ${loadSeconds.toFixed(1)} s`,
  );

  const runAt = new Date(periodEnd.getTime() + 60_000).toISOString();
  const env = {
    DATABASE_URL: url,
    CLICKHOUSE_URL: settings.usageStore === 'clickhouse' ? settings.clickhouseUrl : '',
    CLICKHOUSE_DATABASE: databaseName,
    LOG_LEVEL: 'warn',
    // e.g. "-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0": a
    // statement profile of the runs alone, not of the loading
    ...(process.env.BENCH_RUN_PGOPTIONS ? { PGOPTIONS: process.env.BENCH_RUN_PGOPTIONS } : {}),
  };
  const args = [
    'billing',
    'run',
    '--now',
    runAt,
    ...(settings.batchSize ? ['--batch-size', String(settings.batchSize)] : []),
  ];
  const results = [
    await scenario('run', settings.concurrentRuns, args, env),
    await scenario('rerun (nothing due)', 1, args, env),
  ];
  const { rows } = await db.query<{ invoices: number; periods: number }>(
    'SELECT count(*)::int AS invoices, count(DISTINCT (subscription_id, period_start))::int AS periods FROM invoices',
  );
  await db.close();
  db = undefined;

  if (settings.prorationSubscriptions > 0) {
    // the same rows again (same ids, so the usage in ClickHouse serves both), then the changes
    const prorationUrl = await createDatabase(prorationDatabaseName);
    db = new Database(prorationUrl, { poolSize: 4, applicationName: 'bench-billing-run' });
    await migrate(db);
    await loadData(db, periodStart, periodEnd);
    if (settings.usageStore === 'postgres') await loadUsage(meteredItems, periodStart, periodEnd);
    const lines = await addProrationLines(db, periodStart, periodEnd);
    log(
      `${settings.prorationSubscriptions} subscriptions changed mid-period: ${lines} proration lines waiting`,
    );
    results.push(
      await scenario(
        `run, ${settings.prorationSubscriptions} with proration lines`,
        settings.concurrentRuns,
        args,
        { ...env, DATABASE_URL: prorationUrl },
      ),
    );
    const billed = await db.query<{ lines: number }>(
      'SELECT count(*)::int AS lines FROM subscription_proration_lines WHERE invoice_id IS NOT NULL',
    );
    if (billed.rows[0]!.lines !== lines)
      throw new Error(`${billed.rows[0]!.lines} of ${lines} lines invoiced`);
    await db.close();
    db = undefined;
  }

  if (settings.grantCustomers > 0) {
    const grantsUrl = await createDatabase(grantsDatabaseName);
    db = new Database(grantsUrl, { poolSize: 4, applicationName: 'bench-billing-run' });
    await migrate(db);
    await loadData(db, periodStart, periodEnd);
    if (settings.usageStore === 'postgres') await loadUsage(meteredItems, periodStart, periodEnd);
    const grants = await addCreditGrants(db);
    // as autovacuum would after a bulk load (docs/decisions.md, "Postgres must run autovacuum"); the
    // tables the run fills are left as they are, as in the run without grants
    await db.query('ANALYZE credit_grants, credit_grant_ledger');
    log(`${settings.grantCustomers} customers hold ${grants} credit grants`);
    results.push(
      await scenario(
        `run, ${settings.grantCustomers} customers with 3 grants each`,
        settings.concurrentRuns,
        args,
        { ...env, DATABASE_URL: grantsUrl },
      ),
    );
    const { rows: check } = await db.query<{ broken: number; memos: number }>(
      `WITH memos AS (
         SELECT credit_grant_id, sum(amount) AS paid, count(*) AS n FROM invoice_transactions
          WHERE credit_grant_id IS NOT NULL GROUP BY credit_grant_id
       )
       SELECT count(*) FILTER (WHERE g.used <> coalesce(m.paid, 0))::int AS broken,
              coalesce(sum(m.n), 0)::int AS memos
         FROM credit_grants g LEFT JOIN memos m ON m.credit_grant_id = g.id`,
    );
    if (check[0]!.broken > 0)
      throw new Error(`${check[0]!.broken} grants whose uses disagree with their memos`);
    log(`${check[0]!.memos} CREDIT_MEMOs name a grant; every grant's uses add up to them`);
    await db.close();
    db = undefined;
  }

  let late: { lines: number; expected: number } | undefined;
  if (settings.lateSubscriptions > 0) {
    const lateUrl = await createDatabase(lateDatabaseName);
    db = new Database(lateUrl, { poolSize: 4, applicationName: 'bench-billing-run' });
    await migrate(db);
    const loaded = await loadData(db, periodStart, periodEnd);
    if (settings.usageStore === 'postgres') await loadUsage(loaded.meteredItems, periodStart, periodEnd);
    const previousStart = new Date(Date.UTC(periodStart.getUTCFullYear(), periodStart.getUTCMonth() - 1, 1));
    const lateEvents = await addLateUsage(db, loaded.meteredItems, previousStart, periodStart);
    log(
      `${loaded.meteredItems.length} previous periods posted and recorded; ` +
        `${lateEvents} late events for ${settings.lateSubscriptions} of them`,
    );
    results.push(
      await scenario(
        `run, ${settings.lateSubscriptions} with late usage lines`,
        settings.concurrentRuns,
        args,
        { ...env, DATABASE_URL: lateUrl },
      ),
    );
    const { rows: billed } = await db.query<{ lines: number; quantity: string }>(
      `SELECT count(*)::int AS lines, coalesce(sum(quantity), 0)::text AS quantity FROM invoice_items
        WHERE description LIKE '%late usage%'`,
    );
    late = {
      lines: billed[0]!.lines,
      expected: Math.min(settings.lateSubscriptions, loaded.meteredItems.length),
    };
    const { rows: owed } = await db.query<{ unbilled: number }>(
      `SELECT count(*)::int AS unbilled FROM usage_billed_periods b
        WHERE b.period_quantity + b.late_quantity <> (SELECT coalesce(sum(quantity), 0) FROM usage_events e
                WHERE e.org_id = b.org_id AND e.subscription_item_id = b.subscription_item_id
                  AND e.occurred_at >= b.window_start AND e.occurred_at < b.window_end AND e.voided_at IS NULL)
          AND b.period_start = $1`,
      [previousStart],
    );
    if (owed[0]!.unbilled > 0) throw new Error(`${owed[0]!.unbilled} previous periods not billed exactly`);
    log(
      `${billed[0]!.lines} late-usage lines bill ${billed[0]!.quantity} late units; every period billed exactly`,
    );
  }
  await report(results, rows[0]!, { loadSeconds, events }, late);
}

/**
 * What POST /subscriptions/{id}/changes leaves on the first N subscriptions (every fifth id): seats
 * re-quantified on the 11th day, the base terms recorded, a credit and a charge line waiting.
 */
async function addProrationLines(database: Database, periodStart: Date, periodEnd: Date): Promise<number> {
  const changedAt = new Date(periodStart.getTime() + 10 * 86_400_000);
  const step = Math.max(1, Math.floor(settings.subscriptions / settings.prorationSubscriptions));
  const { rows } = await database.query<{ id: number }>(
    `WITH changed AS (
       UPDATE subscription_items si
          SET base_period_start = $1, base_quantity = si.quantity, base_unit_price = si.unit_price,
              base_included_units = si.included_units, quantity = si.quantity + 1
        WHERE si.usage_type = 'licensed' AND si.subscription_id % $3 = 0 AND si.subscription_id / $3 <= $4
        RETURNING si.org_id, si.subscription_id, si.id, si.product_id, si.quantity, si.unit_price
     ), fraction AS (
       SELECT extract(epoch FROM ($2::timestamptz - $5::timestamptz)) / extract(epoch FROM ($2::timestamptz - $1::timestamptz)) AS f
     )
     INSERT INTO subscription_proration_lines (org_id, subscription_id, subscription_item_id, product_id, description,
       quantity, unit_price, amount, period_start, period_end)
     SELECT c.org_id, c.subscription_id, c.id, c.product_id, x.description, x.quantity, c.unit_price,
            round(x.sign * x.quantity * c.unit_price * f.f, 2), $5, $2
       FROM changed c CROSS JOIN fraction f
       CROSS JOIN LATERAL (VALUES ('Unused time on Seats', c.quantity - 1, -1),
                                  ('Remaining time on Seats', c.quantity, 1)) x(description, quantity, sign)
     RETURNING id`,
    [periodStart, periodEnd, step, settings.prorationSubscriptions, changedAt],
  );
  return rows.length;
}

/**
 * Three promotional grants for each of the first N customers, as POST /credit-grants leaves them
 * (ACTIVE, a `grant` ledger entry): a small one at priority 10 expiring next year (used up by the
 * run), a usage-only one at priority 20, and a large one at the default priority with no expiry.
 */
async function addCreditGrants(database: Database): Promise<number> {
  const { rows } = await database.query<{ id: string }>(
    `WITH picked AS (
       SELECT id, org_id FROM customers ORDER BY id LIMIT $1
     ), made AS (
       INSERT INTO credit_grants (org_id, customer_id, name, category, currency, amount, remaining, priority,
         applies_to, effective_at, expires_at, status)
       SELECT p.org_id, p.id, g.name, 'promotional', 'CAD', g.amount, g.amount, g.priority, g.applies_to,
              now() - interval '1 day', g.expires_at, 'ACTIVE'
         FROM picked p
         CROSS JOIN (VALUES ('Welcome', 5.00, 10, 'all', now() + interval '1 year'),
                            ('Usage pack', 20.00, 20, 'usage', NULL::timestamptz),
                            ('Balance', 1000.00, 50, 'all', NULL::timestamptz))
                    g(name, amount, priority, applies_to, expires_at)
       RETURNING id, org_id, amount
     ), ledger AS (
       INSERT INTO credit_grant_ledger (org_id, credit_grant_id, type, amount, remaining_after)
       SELECT org_id, id, 'grant', amount, amount FROM made
     )
     SELECT id FROM made`,
    [settings.grantCustomers],
  );
  return rows.length;
}

/**
 * The previous period of every metered subscription as a run leaves it: its invoice (paid, so that
 * dunning has nothing to do that the run without does not have either), its usage
 * in Postgres, what it billed of the item recorded (to be compared by the next run); then late
 * events of that period for the first BENCH_LATE_SUBSCRIPTIONS items, written as the Postgres sink
 * writes them (which marks their periods). Returns how many late events.
 */
async function addLateUsage(
  database: Database,
  items: { orgId: number; id: number }[],
  previousStart: Date,
  previousEnd: Date,
): Promise<number> {
  await database.query(
    `WITH invoiced AS (
       INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start,
         period_end, due_date, status, currency, posted_at, billed_from, billed_until, first_period)
       SELECT s.org_id, 'INV-P' || s.id, s.customer_id, s.id, $2::date, $1::date, ($2::timestamptz - interval '1 day')::date,
              $2::date + 30, 'PAID', 'CAD', $2, $1, $2, false
         FROM subscriptions s JOIN subscription_items si ON si.org_id = s.org_id AND si.subscription_id = s.id
        WHERE si.usage_type = 'metered'
       RETURNING id, org_id, subscription_id
     )
     INSERT INTO usage_billed_periods (org_id, subscription_id, subscription_item_id, period_start, period_end,
       window_start, window_end, invoice_id, period_quantity, included_units, unit_price, dirty)
     SELECT i.org_id, i.subscription_id, si.id, $1, $2, $1, $2, i.id, 0, si.included_units, si.unit_price, true
       FROM invoiced i JOIN subscription_items si ON si.org_id = i.org_id AND si.subscription_id = i.subscription_id
      WHERE si.usage_type = 'metered'`,
    [previousStart, previousEnd],
  );
  const sink = new PostgresUsageSink(database);
  const span = previousEnd.getTime() - previousStart.getTime();
  const write = async (late: boolean) => {
    let batch: UsageEventRecord[] = [];
    let total = 0;
    const chosen = late ? items.slice(0, settings.lateSubscriptions) : items;
    const count = late ? 2 : settings.eventsPerItem;
    for (const item of chosen) {
      for (let n = 0; n < count; n++) {
        const at = previousStart.getTime() + Math.floor(((n + 0.5) / count) * span);
        batch.push({
          id: randomUUID(),
          orgId: item.orgId,
          subscriptionItemId: item.id,
          idempotencyKey: `bench-${late ? 'late' : 'prev'}-${item.id}-${n}`,
          quantity: String(10 + ((item.id * 7 + n * 13) % 90)),
          occurredAtMs: at,
          recordedAtMs: late ? Date.now() : at + 500,
        });
        if (batch.length === 5000) {
          await sink.write(batch);
          total += batch.length;
          batch = [];
        }
      }
    }
    await sink.write(batch);
    return total + batch.length;
  };
  await write(false);
  // what the previous run billed: every event of the period so far
  await database.query(
    `UPDATE usage_billed_periods b SET period_quantity = t.total
       FROM (SELECT subscription_item_id, sum(quantity) AS total FROM usage_events
              WHERE occurred_at >= $1 AND occurred_at < $2 GROUP BY 1) t
      WHERE b.subscription_item_id = t.subscription_item_id AND b.period_start = $1`,
    [previousStart, previousEnd],
  );
  const late = await write(true);
  await database.query('ANALYZE usage_billed_periods, usage_events, usage_daily_totals, invoices');
  return late;
}

/** One org, customers across provinces and states, seats and a tiered usage product. */
async function loadData(database: Database, periodStart: Date, periodEnd: Date) {
  const org = await createOrganization(database, { name: 'Bench Billing Co' });
  const seats = await createProduct(database, org.id, {
    name: 'Seats',
    pricing_type: 'recurring',
    unit_price: '25.00',
  });
  const calls = await createProduct(database, org.id, {
    name: 'API calls',
    pricing_type: 'usage',
    pricing_mode: 'graduated',
    tiers: [
      { up_to: '1000', unit_price: '0.002' },
      { up_to: null, unit_price: '0.001' },
    ],
  });
  const places = ["('CA','ON')", "('CA','QC')", "('CA','BC')", "('US','NY')", "('US','OR')", "('CA','NS')"];
  // Bulk set-up (what subscription create does, 10,000 times over, in a few statements): the
  // measured part is the billing run, not the loading.
  await database.query(
    `INSERT INTO customers (org_id, name, country, state_province)
     SELECT $1, 'Customer ' || n, p.country, p.province
       FROM generate_series(1, $2) n
       JOIN (SELECT row_number() OVER () - 1 AS i, country, province
               FROM (VALUES ${places.join(', ')}) v(country, province)) p ON p.i = n % ${places.length}`,
    [org.id, settings.customers],
  );
  const anchor = periodStart.getUTCDate();
  await database.query(
    `INSERT INTO subscriptions (org_id, customer_id, status, title, currency, start_date, next_billing_date,
       billing_period, billing_anchor_day, current_period_start, current_period_end)
     SELECT $1, c.id, 'active', 'Bench ' || n, 'CAD', $3, $4, 'monthly', $5, $3, $4
       FROM generate_series(1, $2) n
       JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS i FROM customers WHERE org_id = $1) c
         ON c.i = n % $6`,
    [org.id, settings.subscriptions, periodStart, periodEnd, anchor, settings.customers],
  );
  await database.query(
    `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type)
     SELECT $1, id, $2, 1 + id % 10, '25.00', 'licensed' FROM subscriptions WHERE org_id = $1`,
    [org.id, seats.id],
  );
  const everyNth = Math.max(1, Math.round(1 / settings.meteredShare));
  const { rows } = await database.query<{ id: number }>(
    `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type,
       included_units)
     SELECT $1, id, $2, 1, 0, 'metered', 100 FROM subscriptions WHERE org_id = $1 AND id % $3 = 0
     RETURNING id`,
    [org.id, calls.id, everyNth],
  );
  return { orgId: org.id, meteredItems: rows.map((r) => ({ orgId: org.id, id: r.id })) };
}

/** Usage written by the sinks' own writers, in batches as a sink flushes them. */
async function loadUsage(items: { orgId: number; id: number }[], periodStart: Date, periodEnd: Date) {
  let sink: UsageSink;
  let close = async () => {};
  if (settings.usageStore === 'clickhouse') {
    const clickhouse = openClickHouse({ url: settings.clickhouseUrl, database: databaseName });
    await migrateClickHouse(clickhouse);
    sink = new ClickHouseUsageSink(clickhouse);
    close = () => clickhouse.close();
  } else {
    sink = new PostgresUsageSink(db!);
  }
  const span = periodEnd.getTime() - periodStart.getTime();
  let batch: UsageEventRecord[] = [];
  let total = 0;
  try {
    for (const item of items) {
      for (let n = 0; n < settings.eventsPerItem; n++) {
        const at = periodStart.getTime() + Math.floor(((n + 0.5) / settings.eventsPerItem) * span);
        batch.push({
          id: randomUUID(),
          orgId: item.orgId,
          subscriptionItemId: item.id,
          idempotencyKey: `bench-${item.id}-${n}`,
          quantity: String(10 + ((item.id * 7 + n * 13) % 90)),
          occurredAtMs: at,
          recordedAtMs: at + 500,
        });
        if (batch.length === 5000) {
          await sink.write(batch);
          total += batch.length;
          batch = [];
        }
      }
    }
    await sink.write(batch);
    total += batch.length;
  } finally {
    await close();
  }
  return total;
}

async function scenario(name: string, processes: number, args: string[], env: Record<string, string>) {
  log(`${name}: ${processes} billing run process(es)`);
  const cpu = cpuSampler(new URL(env.DATABASE_URL!).pathname.slice(1));
  const started = process.hrtime.bigint();
  const outputs = await Promise.all(
    Array.from({ length: processes }, () => consoleRun(args, env, (child) => cpu.watch(child))),
  );
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const invoices = outputs.reduce((sum, o) => sum + o.invoices_created, 0);
  const runSeconds = Math.max(...outputs.map((o) => o.duration_ms)) / 1000;
  const result: RunResult = {
    scenario: name,
    processes,
    invoices,
    runSeconds,
    wallSeconds,
    invoicesPerSecond: runSeconds > 0 ? invoices / runSeconds : 0,
    cpu: await cpu.stop(),
  };
  return result;
}

/**
 * CPU seconds of the billing run processes and of the Postgres client backends of `database`, sampled every
 * 100 ms while they run: a process that exits takes its time with it, so each one's last sample
 * counts (at most 100 ms of each is missed). Backends already there when the scenario starts (the
 * bench's own pool, which loaded the data) count only what they spend from then on: their loading
 * is not the run's. On a busy machine this is the figure that compares two builds; the run's
 * seconds also measure everyone else's load.
 */
function cpuSampler(database: string) {
  const children: ChildProcess[] = [];
  const last = new Map<string, { postgres: boolean; seconds: number }>();
  const ours = new Map<string, boolean>();
  // what each backend of the database had spent at the first sample
  const before = new Map<string, number>();
  let first = true;
  const sample = async () => {
    for (const child of children) {
      const seconds = await cpuSeconds(child.pid);
      if (seconds > 0) last.set(`run ${child.pid}`, { postgres: false, seconds });
    }
    for (const pid of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(pid) || ours.get(pid) === false) continue;
      if (!ours.has(pid)) {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
        if (!stat.includes('(postgres)')) {
          ours.set(pid, false);
          continue;
        }
        const title = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ');
        // a backend just forked still bears the postmaster's command line: judged once it names its database
        if (!title.startsWith('postgres: ')) continue;
        // its client backends; not autovacuum, which comes when it comes (after the run, or during it)
        ours.set(pid, title.split(' ').includes(database) && !title.includes('autovacuum'));
        if (!ours.get(pid)) continue;
      }
      const seconds = await cpuSeconds(Number(pid));
      if (first) before.set(pid, seconds);
      const spent = seconds - (before.get(pid) ?? 0);
      if (spent > 0) last.set(`pg ${pid}`, { postgres: true, seconds: spent });
    }
    first = false;
  };
  let running = sample();
  const timer = setInterval(() => {
    running = running.then(sample);
  }, 100);
  return {
    watch(child: ChildProcess) {
      children.push(child);
    },
    async stop() {
      clearInterval(timer);
      await running;
      const sum = (postgres: boolean) =>
        [...last.values()].filter((p) => p.postgres === postgres).reduce((total, p) => total + p.seconds, 0);
      return { run: sum(false), postgres: sum(true) };
    },
  };
}

function consoleRun(
  args: string[],
  env: Record<string, string>,
  started: (child: ChildProcess) => void,
): Promise<{ invoices_created: number; duration_ms: number; failures: unknown[] }> {
  return new Promise((resolve, reject) => {
    const child = spawnEntry('bin/console.ts', {
      args,
      env,
      nodeArgs: settings.runNodeArgs,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started(child);
    let stdout = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => process.stderr.write(`  | ${d}`));
    const timer = setTimeout(() => child.kill('SIGTERM'), settings.timeoutSeconds * 1000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`billing run exited with ${code}`));
      const summary = JSON.parse(stdout);
      if (summary.failures.length) {
        return reject(new Error(`billing run failures: ${JSON.stringify(summary.failures)}`));
      }
      resolve(summary);
    });
  });
}

async function report(
  results: RunResult[],
  stored: { invoices: number; periods: number },
  setup: { loadSeconds: number; events: number },
  late?: { lines: number; expected: number },
): Promise<void> {
  const [run, rerun] = results as [RunResult, RunResult];
  const withLate = results.find((r) => r.scenario.includes('late usage'));
  const withLines = results.find((r) => r.scenario.includes('proration lines'));
  const withGrants = results.find((r) => r.scenario.includes('grants'));
  const cpuTotal = (r: RunResult) => r.cpu.run + r.cpu.postgres;
  const perInvoice = (seconds: number, r: RunResult) =>
    r.invoices > 0 ? ((seconds * 1e6) / r.invoices).toFixed(0) : '-';
  printTable(
    [
      'scenario',
      'processes',
      'invoices',
      'run s',
      'wall s',
      'invoices/s',
      'x rerun (wall)',
      'CPU s: run, Postgres',
      'CPU µs/invoice: run, Postgres',
    ],
    results.map((r) => [
      r.scenario,
      r.processes,
      r.invoices,
      r.runSeconds.toFixed(2),
      r.wallSeconds.toFixed(2),
      r.invoicesPerSecond.toFixed(0),
      (r.wallSeconds / rerun.wallSeconds).toFixed(2),
      `${r.cpu.run.toFixed(2)}, ${r.cpu.postgres.toFixed(2)}`,
      `${perInvoice(r.cpu.run, r)}, ${perInvoice(r.cpu.postgres, r)}`,
    ]),
  );
  const checks = [
    {
      check: `run completes in <= ${BAR_SECONDS} s (wall, process start included)`,
      value: `${run.wallSeconds.toFixed(2)} s`,
      pass: run.wallSeconds <= BAR_SECONDS,
    },
    {
      check: 'every due subscription invoiced once',
      value: `${run.invoices} of ${settings.subscriptions}`,
      pass: run.invoices === settings.subscriptions && stored.invoices === stored.periods,
    },
    {
      check: 'a second run creates nothing',
      value: `${rerun.invoices} invoices`,
      pass: rerun.invoices === 0,
    },
    ...(withLines
      ? [
          {
            check: `with ${settings.prorationSubscriptions} carrying proration lines: run <= ${BAR_PRORATION_RATIO}x the run without`,
            value: `${(withLines.runSeconds / run.runSeconds).toFixed(2)}x (${withLines.runSeconds.toFixed(2)} s / ${run.runSeconds.toFixed(2)} s)`,
            pass:
              withLines.runSeconds / run.runSeconds <= BAR_PRORATION_RATIO &&
              withLines.invoices === run.invoices,
          },
        ]
      : []),
    ...(withGrants
      ? [
          {
            check: `with ${settings.grantCustomers} customers holding 3 grants each: run <= ${BAR_GRANTS_RATIO}x the run without`,
            value:
              `${(withGrants.runSeconds / run.runSeconds).toFixed(2)}x (${withGrants.runSeconds.toFixed(2)} s / ${run.runSeconds.toFixed(2)} s; ` +
              `CPU run + Postgres ${(cpuTotal(withGrants) / cpuTotal(run)).toFixed(2)}x)`,
            pass:
              withGrants.runSeconds / run.runSeconds <= BAR_GRANTS_RATIO &&
              withGrants.invoices === run.invoices,
          },
        ]
      : []),
    ...(withLate && late
      ? [
          {
            check: `with ${settings.lateSubscriptions} carrying late usage lines: run <= ${BAR_LATE_RATIO}x the run without`,
            value: `${(withLate.runSeconds / run.runSeconds).toFixed(2)}x (${withLate.runSeconds.toFixed(2)} s / ${run.runSeconds.toFixed(2)} s)`,
            pass:
              withLate.runSeconds / run.runSeconds <= BAR_LATE_RATIO && withLate.invoices === run.invoices,
          },
          {
            check: 'every late event billed once, as one late-usage line per subscription',
            value: `${late.lines} lines of ${late.expected}`,
            pass: late.lines === late.expected,
          },
        ]
      : []),
  ];
  printBars(checks.map((c) => ({ bar: c.check, measured: c.value, pass: c.pass })));
  const file = await writeReport('billing-run', { settings, setup, results, stored, checks });
  log(`report written to ${file}`);
  if (checks.some((c) => !c.pass)) process.exitCode = 1;
}
