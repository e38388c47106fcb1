/**
 * `npm run bench:ingest`: usage ingest on real Redis, the Kafka test broker, Postgres and
 * ClickHouse (DESIGN §1). Every server runs as its own process; autocannon drives them from this
 * one with a fresh idempotency key per event, BENCH_CONNECTIONS connections (default 100) for
 * BENCH_DURATION_SECONDS each (default 20) after BENCH_WARMUP_SECONDS (default 3) of warm-up:
 *
 *   bare    a bare uWS route answering 201 (bare-server.ts): the ceiling of HTTP on this machine
 *   ingest  POST /usage/events on the ingest service (uWS, Redis + Kafka): the full path
 *   api     the same route on the api service (Fastify), same core, same Redis and Kafka
 *   batch   POST /usage/events/batch on the ingest service, BENCH_BATCH_EVENTS events per request
 *           (default 1000)
 *
 * Then the sinks (services/ingest/sinks.ts) start and drain the topic into Postgres and
 * ClickHouse; the report compares the events the services accepted (their own counters) with
 * the rows in Postgres and the count and exact decimal sum in ClickHouse, and says how long the
 * sinks took. Bars (issue 4): ingest >= 20,000 events/s with p99 <= 25 ms, ingest/api >= 1.5,
 * batch >= 100,000 events/s, zero lost, zero doubled. Report: bench/results/ingest-<time>.json.
 *
 * Other settings (env): BENCH_SCENARIOS (comma list, default all), BENCH_PARTITIONS (topic
 * partitions, default 6), BENCH_ITEMS (metered items the events spread over, default 50),
 * BENCH_CATCHUP_TIMEOUT_SECONDS (default 900), KAFKA_LINGER_MS (passed to the services),
 * DATABASE_URL (admin URL; a database bench_ingest_<pid> is created and dropped), CLICKHOUSE_URL,
 * KAFKA_BROKERS (default: a Kafka test broker of this run), BENCH_REDIS_URL (default: a
 * redis-server of this run on a free port, so its keys leave with it), BENCH_PROFILE_DIR (each
 * process started here writes a V8 CPU profile there).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createApiKey } from '../../libs/auth/index.js';
import { openClickHouse } from '../../libs/clickhouse/index.js';
import { Database, migrate } from '../../libs/db/index.js';
import { formatScaled, parseScaled } from '../../libs/money/index.js';
import { createOrganization, setRateLimitOverride } from '../../libs/organizations/index.js';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { type KafkaTestBroker, startKafkaTestBroker } from '../../test/helpers/kafka-test-broker.js';

interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; max: number };
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
}

/** The part of autocannon's API used here (the package ships no types). */
const autocannon = createRequire(import.meta.url)('autocannon') as (options: {
  url: string;
  connections: number;
  duration: number;
  method: string;
  headers?: Record<string, string>;
  requests?: { setupRequest: (request: AutocannonRequest) => AutocannonRequest }[];
}) => Promise<AutocannonResult>;

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCENARIOS = ['bare', 'ingest', 'api', 'batch'] as const;
type Scenario = (typeof SCENARIOS)[number];

const settings = {
  connections: intEnv('BENCH_CONNECTIONS', 100),
  durationSeconds: intEnv('BENCH_DURATION_SECONDS', 20),
  warmupSeconds: intEnv('BENCH_WARMUP_SECONDS', 3),
  batchEvents: intEnv('BENCH_BATCH_EVENTS', 1000),
  partitions: intEnv('BENCH_PARTITIONS', 6),
  items: intEnv('BENCH_ITEMS', 50),
  catchupTimeoutSeconds: intEnv('BENCH_CATCHUP_TIMEOUT_SECONDS', 900),
  lingerMs: process.env.KAFKA_LINGER_MS,
  scenarios: (process.env.BENCH_SCENARIOS ?? SCENARIOS.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s): s is Scenario => (SCENARIOS as readonly string[]).includes(s)),
  adminUrl: process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres',
  clickhouseUrl: process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:8123',
  kafkaBrokers: process.env.KAFKA_BROKERS,
  redisUrl: process.env.BENCH_REDIS_URL,
};

const BARS = {
  ingestEventsPerSecond: 20_000,
  ingestP99Ms: 25,
  ingestOverApi: 1.5,
  batchEventsPerSecond: 100_000,
};
/** Every event carries this quantity, so the expected sum is exact: accepted x QUANTITY. */
const QUANTITY = '0.12345678';

interface ScenarioResult {
  scenario: Scenario;
  eventsPerRequest: number;
  requestsPerSecond: number;
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  errors: number;
}

const runId = `bench_ingest_${process.pid}`;
const children: ChildProcess[] = [];
let broker: KafkaTestBroker | undefined;

try {
  await main();
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await broker?.stop();
  await cleanUp();
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify({ ...settings, adminUrl: undefined })}`);
  const databaseUrl = databaseUrlFor(settings.adminUrl, runId);
  await admin(`CREATE DATABASE "${runId}"`);
  const { apiKey, itemIds } = await prepareDatabase(databaseUrl);

  const redisUrl = settings.redisUrl ?? (await startRedis());
  let brokers = settings.kafkaBrokers;
  if (!brokers) {
    broker = await startKafkaTestBroker();
    await broker.createTopic(runId, settings.partitions);
    brokers = broker.brokers.join(',');
  }
  const serviceEnv: Record<string, string | undefined> = {
    APP_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: `${runId}:`,
    KAFKA_BROKERS: brokers,
    KAFKA_USAGE_TOPIC: runId,
    KAFKA_TOPIC_PARTITIONS: String(settings.partitions),
    KAFKA_CONSUMER_GROUP_PREFIX: `${runId}-`,
    KAFKA_LINGER_MS: settings.lingerMs,
    CLICKHOUSE_URL: settings.clickhouseUrl,
    CLICKHOUSE_DATABASE: runId,
  };

  const results: ScenarioResult[] = [];
  let accepted = 0;
  let deduplicated = 0;
  const ingestPort = await freePort();
  const ingestNeeded = settings.scenarios.some((s) => s === 'ingest' || s === 'batch');
  const ingest = ingestNeeded
    ? await startProcess(
        'services/ingest/main.ts',
        { ...serviceEnv, INGEST_PORT: String(ingestPort) },
        ingestPort,
      )
    : undefined;

  for (const scenario of settings.scenarios) {
    let port = ingestPort;
    let server: ChildProcess | undefined;
    if (scenario === 'bare') {
      port = await freePort();
      server = await startProcess('bench/ingest/bare-server.ts', { PORT: String(port) }, port, false);
    } else if (scenario === 'api') {
      port = await freePort();
      server = await startProcess('services/api/main.ts', { ...serviceEnv, PORT: String(port) }, port);
    }
    results.push(await measure(scenario, port, apiKey, itemIds));
    if (scenario === 'api') {
      const counts = await ingestCounters(port);
      accepted += counts.accepted;
      deduplicated += counts.deduplicated;
    }
    if (server) await stopProcess(server);
  }
  if (ingest) {
    const counts = await ingestCounters(ingestPort);
    accepted += counts.accepted;
    deduplicated += counts.deduplicated;
    await stopProcess(ingest);
  }

  printScenarios(results);
  const drained = await drain(databaseUrl, serviceEnv, accepted);
  const report = buildReport(results, { accepted, deduplicated, ...drained });
  await mkdir(path.join(ROOT, 'bench/results'), { recursive: true });
  const file = path.join(ROOT, `bench/results/ingest-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  log(`report written to ${path.relative(ROOT, file)}`);
}

/** Migrations, one organization with a limit the run never meets, a subscription of metered items. */
async function prepareDatabase(databaseUrl: string): Promise<{ apiKey: string; itemIds: number[] }> {
  const db = new Database(databaseUrl, { poolSize: 2 });
  try {
    await migrate(db);
    const org = await createOrganization(db, { name: 'Ingest bench', plan: 'scale' });
    await setRateLimitOverride(db, org.id, 2_000_000_000);
    const { api_key: apiKey } = await createApiKey(db, { orgId: org.id, name: 'bench' });
    // Catalog and subscription written directly: the benchmark measures ingest, not the console.
    const { rows: products } = await db.query<{ id: number }>(
      `INSERT INTO products (org_id, name, pricing_type, category) VALUES ($1, 'API calls', 'usage', 'usage') RETURNING id`,
      [org.id],
    );
    const { rows: customers } = await db.query<{ id: number }>(
      `INSERT INTO customers (org_id, name) VALUES ($1, 'Bench customer') RETURNING id`,
      [org.id],
    );
    const { rows: subscriptions } = await db.query<{ id: number }>(
      `INSERT INTO subscriptions (org_id, customer_id, status, start_date, next_billing_date, billing_period,
         billing_anchor_day, current_period_start, current_period_end)
       VALUES ($1, $2, 'active', now(), now() + interval '1 month', 'monthly', 1, now(), now() + interval '1 month')
       RETURNING id`,
      [org.id, customers[0]!.id],
    );
    const { rows: items } = await db.query<{ id: number }>(
      `INSERT INTO subscription_items (org_id, subscription_id, product_id, unit_price, usage_type)
       SELECT $1, $2, $3, 0.01, 'metered' FROM generate_series(1, $4) RETURNING id`,
      [org.id, subscriptions[0]!.id, products[0]!.id, settings.items],
    );
    return { apiKey, itemIds: items.map((item) => item.id) };
  } finally {
    await db.close();
  }
}

async function measure(
  scenario: Scenario,
  port: number,
  apiKey: string,
  itemIds: number[],
): Promise<ScenarioResult> {
  const batch = scenario === 'batch';
  const eventsPerRequest = batch ? settings.batchEvents : 1;
  let sequence = 0;
  const prefix = `${scenario}-${Date.now().toString(36)}`;
  const item = () => itemIds[sequence % itemIds.length];
  const setupRequest = (request: AutocannonRequest): AutocannonRequest => {
    if (!batch) {
      const key = `${prefix}-${++sequence}`;
      return {
        ...request,
        headers: { ...request.headers, 'idempotency-key': key },
        body: `{"subscription_item_id":${item()},"quantity":${QUANTITY}}`,
      };
    }
    let body = '{"events":[';
    for (let i = 0; i < settings.batchEvents; i++) {
      body += `${i ? ',' : ''}{"subscription_item_id":${item()},"quantity":${QUANTITY},"idempotency_key":"${prefix}-${++sequence}"}`;
    }
    return { ...request, body: `${body}]}` };
  };
  const options = {
    url: `http://127.0.0.1:${port}${BASE_PATH}/usage/events${batch ? '/batch' : ''}`,
    method: 'POST',
    connections: settings.connections,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    requests: [{ setupRequest }],
  };
  log(`${scenario}: warm-up ${settings.warmupSeconds} s, then ${settings.durationSeconds} s`);
  if (settings.warmupSeconds > 0) await autocannon({ ...options, duration: settings.warmupSeconds });
  const result = await autocannon({ ...options, duration: settings.durationSeconds });
  const requestsPerSecond = result['2xx'] / result.duration;
  return {
    scenario,
    eventsPerRequest,
    requestsPerSecond: round(requestsPerSecond),
    eventsPerSecond: round(requestsPerSecond * eventsPerRequest),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/**
 * Events a service accepted as new and as repeats, from its own counters, once they stopped moving:
 * requests autocannon gave up on at the end of a run may still be completing on the server.
 */
async function ingestCounters(port: number): Promise<{ accepted: number; deduplicated: number }> {
  const read = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const value = (outcome: string) => {
      const pattern = new RegExp(`billing_ingest_events_total\\{outcome="${outcome}",reason=""\\} (\\d+)`);
      return Number(pattern.exec(text)?.[1] ?? 0);
    };
    return { accepted: value('accepted'), deduplicated: value('deduplicated') };
  };
  let last = await read();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = await read();
    if (now.accepted === last.accepted && now.deduplicated === last.deduplicated) return now;
    last = now;
  }
}

/** Starts the sinks after the load and waits until Postgres and ClickHouse hold every event. */
async function drain(
  databaseUrl: string,
  serviceEnv: Record<string, string | undefined>,
  accepted: number,
): Promise<{
  catchUpSeconds: number | null;
  postgresRows: number;
  postgresSum: string;
  clickhouseRows: number;
  clickhouseRowsBeforeMerge: number;
  clickhouseSum: string;
}> {
  const sinksPort = await freePort();
  const started = Date.now();
  const sinks = await startProcess(
    'services/ingest/sinks.ts',
    { ...serviceEnv, SINKS_PORT: String(sinksPort) },
    sinksPort,
  );
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const clickhouse = openClickHouse({ url: settings.clickhouseUrl, database: runId });
  const read = async () => {
    const { rows } = await db.query<{ n: string; total: string | null }>(
      'SELECT count(*) AS n, sum(quantity)::text AS total FROM usage_events',
    );
    const [final] = await clickhouse.rows<{ n: string; total: string; raw: string }>(
      `SELECT count() AS n, toString(sum(quantity)) AS total, (SELECT count() FROM ${runId}.usage_events) AS raw
         FROM ${runId}.usage_events FINAL`,
    );
    return {
      postgresRows: Number(rows[0]!.n),
      postgresSum: rows[0]!.total ?? '0.00000000',
      clickhouseRows: Number(final?.n ?? 0),
      clickhouseRowsBeforeMerge: Number(final?.raw ?? 0),
      clickhouseSum: final?.total ?? '0.00000000',
    };
  };
  try {
    log(`sinks draining ${accepted} events into Postgres and ClickHouse...`);
    let state = await read();
    let lastLog = Date.now();
    while (state.postgresRows < accepted || state.clickhouseRows < accepted) {
      if (Date.now() - started > settings.catchupTimeoutSeconds * 1000) {
        log('sinks did not catch up before BENCH_CATCHUP_TIMEOUT_SECONDS');
        return { catchUpSeconds: null, ...state };
      }
      if (Date.now() - lastLog > 10_000) {
        log(`  postgres ${state.postgresRows}, clickhouse ${state.clickhouseRows} of ${accepted}`);
        lastLog = Date.now();
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
      state = await read();
    }
    const catchUpSeconds = round((Date.now() - started) / 1000);
    // A moment more: anything beyond `accepted` would show up now.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return { catchUpSeconds, ...(await read()) };
  } finally {
    await db.end();
    await clickhouse.close();
    await stopProcess(sinks);
  }
}

function buildReport(
  results: ScenarioResult[],
  totals: {
    accepted: number;
    deduplicated: number;
    catchUpSeconds: number | null;
    postgresRows: number;
    postgresSum: string;
    clickhouseRows: number;
    clickhouseRowsBeforeMerge: number;
    clickhouseSum: string;
  },
) {
  const byName = Object.fromEntries(results.map((r) => [r.scenario, r])) as Partial<
    Record<Scenario, ScenarioResult>
  >;
  const ratio = (a?: ScenarioResult, b?: ScenarioResult) =>
    a && b && b.eventsPerSecond > 0 ? round(a.eventsPerSecond / b.eventsPerSecond) : null;
  const expectedSum = formatScaled(BigInt(totals.accepted) * parseScaled(QUANTITY, 8), 8);
  const lost =
    Math.max(0, totals.accepted - totals.postgresRows) + Math.max(0, totals.accepted - totals.clickhouseRows);
  const doubled =
    Math.max(0, totals.postgresRows - totals.accepted) +
    Math.max(0, totals.clickhouseRows - totals.accepted) +
    totals.deduplicated;
  const ingest = byName.ingest;
  const checks = [
    check(
      `ingest >= ${BARS.ingestEventsPerSecond} events/s`,
      ingest?.eventsPerSecond,
      (v) => v >= BARS.ingestEventsPerSecond,
    ),
    check(`ingest p99 <= ${BARS.ingestP99Ms} ms`, ingest?.p99Ms, (v) => v <= BARS.ingestP99Ms),
    check(`ingest / api >= ${BARS.ingestOverApi}`, ratio(ingest, byName.api), (v) => v >= BARS.ingestOverApi),
    check(
      `batch >= ${BARS.batchEventsPerSecond} events/s`,
      byName.batch?.eventsPerSecond,
      (v) => v >= BARS.batchEventsPerSecond,
    ),
    check('zero lost', lost, (v) => v === 0),
    check('zero doubled', doubled, (v) => v === 0),
    check('Postgres sum exact', totals.postgresSum === expectedSum ? 1 : 0, (v) => v === 1),
    check('ClickHouse sum exact', totals.clickhouseSum === expectedSum ? 1 : 0, (v) => v === 1),
  ];
  const ratios = { ingestOverBare: ratio(ingest, byName.bare), ingestOverApi: ratio(ingest, byName.api) };

  console.log(
    '\nratios: ingest/bare',
    ratios.ingestOverBare ?? '-',
    ' ingest/api',
    ratios.ingestOverApi ?? '-',
  );
  console.log(
    `\nevents accepted ${totals.accepted} (repeats ${totals.deduplicated})  |  Postgres rows ${totals.postgresRows}, ` +
      `sum ${totals.postgresSum}  |  ClickHouse rows ${totals.clickhouseRows} (before merges ${totals.clickhouseRowsBeforeMerge}), ` +
      `sum ${totals.clickhouseSum}  |  expected sum ${expectedSum}`,
  );
  console.log(`sinks caught up in ${totals.catchUpSeconds ?? 'n/a (timed out)'} s after the load\n`);
  console.log('bar                                   value        pass');
  for (const c of checks) {
    console.log(
      `${c.bar.padEnd(38)}${String(c.value ?? '-').padStart(10)}   ${c.pass === null ? 'n/a' : c.pass ? 'PASS' : 'FAIL'}`,
    );
  }
  return {
    benchmark: 'ingest',
    at: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
    settings: { ...settings, adminUrl: undefined },
    scenarios: results,
    ratios,
    totals: { ...totals, expectedSum, lost, doubled },
    bars: checks,
  };
}

function check(bar: string, value: number | null | undefined, pass: (value: number) => boolean) {
  return { bar, value: value ?? null, pass: value === null || value === undefined ? null : pass(value) };
}

function printScenarios(results: ScenarioResult[]): void {
  console.log('\nscenario   events/req   req/s      events/s     p50 ms   p99 ms   max ms   non-2xx  errors');
  for (const r of results) {
    console.log(
      `${r.scenario.padEnd(11)}${String(r.eventsPerRequest).padStart(10)}` +
        `${String(r.requestsPerSecond).padStart(10)}${String(r.eventsPerSecond).padStart(13)}` +
        `${String(r.p50Ms).padStart(9)}${String(r.p99Ms).padStart(9)}${String(r.maxMs).padStart(9)}` +
        `${String(r.non2xx).padStart(10)}${String(r.errors).padStart(8)}`,
    );
  }
}

/** A service entry point as ONE node process (node --import tsx), ready once /healthz answers. */
async function startProcess(
  entry: string,
  env: Record<string, string | undefined>,
  port: number,
  healthCheck = true,
): Promise<ChildProcess> {
  // BENCH_PROFILE_DIR: each service process writes a V8 CPU profile there when it exits.
  const profile = process.env.BENCH_PROFILE_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_PROFILE_DIR)}`]
    : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', path.join(ROOT, entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (data) => (output += data));
  child.stderr!.on('data', (data) => (output += data));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) throw new Error(`${entry} did not start:\n${output}`);
    const up = healthCheck
      ? await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (response) => response.ok,
          () => false,
        )
      : output.includes('"port"');
    if (up) return child;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

/** A redis-server of this run: its keys (one per event) go away with it. */
async function startRedis(): Promise<string> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (data: Buffer) => {
      output += data;
      if (output.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
  });
  return `redis://127.0.0.1:${port}`;
}

async function cleanUp(): Promise<void> {
  await admin(`DROP DATABASE IF EXISTS "${runId}" WITH (FORCE)`).catch((error) =>
    log(`cleanup: ${error.message}`),
  );
  const clickhouse = openClickHouse({ url: settings.clickhouseUrl, database: runId });
  await clickhouse
    .command(`DROP DATABASE IF EXISTS ${runId}`)
    .catch((error) => log(`cleanup: ${(error as Error).message}`));
  await clickhouse.close();
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: settings.adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function databaseUrlFor(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function intEnv(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`);
  return value;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

function log(message: string): void {
  process.stderr.write(`[bench:ingest] ${message}\n`);
}
