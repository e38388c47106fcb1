/**
 * `npm run bench:entitlements`: entitlements (issue 35) in the distributed mode, every server its
 * own process (api, ingest on uWS, sinks), a redis-server and a Kafka test broker of the run's own.
 *
 *   check   GET /customers/{id}/entitlements/{product_id} of BENCH_CUSTOMERS customers (default
 *           200, one metered item each with a usage limit and events), picked at random, on
 *           BENCH_CONNECTIONS clients (default 50). Each counter is built before the load (the
 *           first check of an item rebuilds it from Postgres; docs/decisions.md). Three times: as
 *           fast as the api answers (closed loop: latency is then 50 / throughput); paced evenly at
 *           BENCH_CHECK_RATE checks/s (default 2,000) over the same 50 clients (pipeline/paced-load:
 *           check k is due at k / rate, its latency counts from then); and paced by autocannon's
 *           `overallRate`, which sends each connection's share of a second in a burst at the top of
 *           the second (a saturated api for a third of each second, then silence): kept to show the
 *           difference. Bar: p99 <= 5 ms. Per check: CPU of the api, Postgres (this run's database
 *           and the cluster's own processes), Redis and the load generator, and Redis calls.
 *   ingest  POST /usage/events on the ingest service, a fresh key per event over BENCH_ITEMS items
 *           (default 500), BENCH_INGEST_CONNECTIONS clients (default 100), with the per-item period
 *           counter (USAGE_COUNTER=true) and without it (false), alternated BENCH_ROUNDS times
 *           (default 2) back to back, each run on a fresh ingest process. Bar: with >= 95% of without
 *           (the median of the rounds' own ratios; the ratio of the means is shown beside it).
 *
 * Each load runs BENCH_DURATION_SECONDS (default 10) after BENCH_WARMUP_SECONDS (default 2). The
 * machine is shared: the report says how busy it was before each run (it does not wait for quiet).
 * Each load also logs, and reports as `timeline`, its p50/p99/max per second of the run (by when a
 * request was due or sent): a tail made by a few bad seconds (a GC, periodic work elsewhere on the
 * box) shows as spikes, one spread over the run as a flat line.
 * Report: bench/results/entitlements-<time>.json. Settings (env): BENCH_SCENARIOS (comma list),
 * DATABASE_URL (admin URL; a database bench_entitlements_<pid> is created and dropped),
 * BENCH_PROFILE_DIR (each server writes a V8 CPU profile there when it stops, --cpu-prof),
 * BENCH_API_NODE_FLAGS (more Node flags for the api, after its own: `--trace-gc`, a semi-space size).
 */
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { createApiKey } from '../../libs/auth/index.js';
import { Database, migrate } from '../../libs/db/index.js';
import { createOrganization, setRateLimitOverride } from '../../libs/organizations/index.js';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { pacedLoad } from '../pipeline/paced-load.js';
import {
  type AutocannonOptions,
  autocannon,
  benchNodeFlags,
  cpuSeconds,
  createDatabase,
  dropDatabase,
  freePort,
  freshKeyRequest,
  intEnv,
  KEY_SLOT,
  LatencyTimeline,
  logger,
  pairedShare,
  postgresCpuSeconds,
  printBars,
  printTable,
  randomRequest,
  requestBytes,
  type SecondOfLoad,
  scenariosEnv,
  spawnEntry,
  startKafkaTestBrokerProcess,
  startRedisServer,
  stopChildren,
  stopProcess,
  timelineLine,
  waitForQuietMachine,
  waitUntilReady,
  writeReport,
} from '../support.js';

const SCENARIOS = ['check', 'ingest'] as const;
const settings = {
  customers: intEnv('BENCH_CUSTOMERS', 200, 1),
  items: intEnv('BENCH_ITEMS', 500, 1),
  connections: intEnv('BENCH_CONNECTIONS', 50, 1),
  checkRate: intEnv('BENCH_CHECK_RATE', 2000, 1),
  ingestConnections: intEnv('BENCH_INGEST_CONNECTIONS', 100, 1),
  rounds: intEnv('BENCH_ROUNDS', 2, 1),
  durationSeconds: intEnv('BENCH_DURATION_SECONDS', 10, 1),
  warmupSeconds: intEnv('BENCH_WARMUP_SECONDS', 2),
  scenarios: scenariosEnv(SCENARIOS),
};
/** The commands the counter, dedup and rate-limit scripts run (never sent on their own on these paths). */
const SCRIPT_INNER_COMMANDS = new Set([
  'set',
  'get',
  'incrby',
  'expire',
  'pexpire',
  'hincrby',
  'hexists',
  'hmget',
  'hset',
  'hdel',
  'del',
]);

const BARS = { checkP99Ms: 5, counterShareOfBaseline: 0.95 };

const runId = `bench_entitlements_${process.pid}`;
const log = logger('entitlements');

interface Load {
  scenario: string;
  variant: string;
  machineBusyBefore: number;
  requestsPerSecond: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  errors: number;
  serverCpuMicrosPerRequest: number;
  redisCpuMicrosPerRequest: number;
  postgresCpuMicrosPerRequest: number;
  loaderCpuMicrosPerRequest: number;
  /**
   * Redis calls per request: script calls (EVALSHA, EVAL) and commands sent on their own, not the
   * commands a script runs; a call batched for several requests is shared among them.
   */
  redisCallsPerRequest: number;
  /** p50, p99 and max of each second of the run: a few bad seconds or a tail spread over all of them. */
  timeline: SecondOfLoad[];
}

interface Setup {
  apiKey: string;
  productId: number;
  customerIds: number[];
  /** The metered item of each customer (check), then BENCH_ITEMS more on one subscription (ingest). */
  customerItems: number[];
  ingestItems: number[];
}

const loads: Load[] = [];
/** The run's redis-server, whose CPU each load reports (the counter's cost is in its scripts). */
let redisPid: number | undefined;
let redisClient: Redis | undefined;

try {
  await main();
} finally {
  redisClient?.disconnect();
  // SIGTERM first: a server run with --cpu-prof writes its profile as it exits
  await stopChildren(process.env.BENCH_PROFILE_DIR ? 'SIGTERM' : 'SIGKILL');
  await dropDatabase(runId, log);
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify(settings)}`);
  const databaseUrl = await createDatabase(runId);
  const setup = await prepare(databaseUrl);
  const redis = await startRedisServer();
  redisPid = redis.pid;
  redisClient = new Redis(redis.url, { lazyConnect: false });
  const broker = await startKafkaTestBrokerProcess();
  const topic = `${runId}_usage`;
  await broker.createTopic(topic, 16);
  const env: Record<string, string | undefined> = {
    APP_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '20',
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: `${runId}:`,
    KAFKA_BROKERS: broker.bootstrap,
    KAFKA_USAGE_TOPIC: topic,
    KAFKA_TOPIC_PARTITIONS: '16',
    KAFKA_CONSUMER_GROUP_PREFIX: `${runId}-`,
    CLICKHOUSE_URL: undefined,
  };
  if (settings.scenarios.includes('check')) await check(setup, env);
  if (settings.scenarios.includes('ingest')) await ingest(setup, env);

  printTable(
    [
      'scenario',
      'variant',
      'busy before',
      'req/s',
      'p50 ms',
      'p90 ms',
      'p99 ms',
      'max ms',
      'failed',
      'server CPU µs/req',
      'Redis CPU µs/req',
      'Postgres CPU µs/req',
      'loader CPU µs/req',
      'Redis calls/req',
    ],
    loads.map((l) => [
      l.scenario,
      l.variant,
      `${Math.round(l.machineBusyBefore * 100)}%`,
      l.requestsPerSecond.toFixed(0),
      l.p50Ms,
      l.p90Ms,
      l.p99Ms,
      l.maxMs,
      l.non2xx + l.errors,
      l.serverCpuMicrosPerRequest,
      l.redisCpuMicrosPerRequest,
      l.postgresCpuMicrosPerRequest,
      l.loaderCpuMicrosPerRequest,
      l.redisCallsPerRequest,
    ]),
  );
  const bars = evaluate();
  printBars(bars);
  log(`report: ${await writeReport('entitlements', { settings, loads, bars })}`);
  if (bars.some((bar) => bar.pass === false)) process.exitCode = 1;
}

/** One organization; per customer a subscription with one metered item (limit 1,000,000); the ingest's items. */
async function prepare(databaseUrl: string): Promise<Setup> {
  const db = new Database(databaseUrl, { poolSize: 2 });
  try {
    await migrate(db);
    const org = await createOrganization(db, { name: 'Entitlements bench', plan: 'scale' });
    await setRateLimitOverride(db, org.id, 2_000_000_000);
    const { api_key: apiKey } = await createApiKey(db, { orgId: org.id, name: 'bench' });
    // written directly: the bench measures the check and ingest, not the console
    const { rows: products } = await db.query<{ id: number }>(
      `INSERT INTO products (org_id, name, pricing_type, category) VALUES ($1, 'API calls', 'usage', 'usage') RETURNING id`,
      [org.id],
    );
    const productId = products[0]!.id;
    const { rows: customers } = await db.query<{ id: number }>(
      `INSERT INTO customers (org_id, name) SELECT $1, 'Customer ' || n FROM generate_series(1, $2) AS n RETURNING id`,
      [org.id, settings.customers + 1],
    );
    const { rows: subscriptions } = await db.query<{ id: number; customer_id: number }>(
      `INSERT INTO subscriptions (org_id, customer_id, status, start_date, next_billing_date, billing_period,
         billing_anchor_day, current_period_start, current_period_end)
       SELECT $1, c, 'active', now(), now() + interval '1 month', 'monthly', extract(day FROM now())::int, now(),
              now() + interval '1 month'
         FROM unnest($2::bigint[]) AS c
       RETURNING id, customer_id`,
      [org.id, customers.map((c) => c.id)],
    );
    const { rows: items } = await db.query<{ id: number; subscription_id: number }>(
      `INSERT INTO subscription_items (org_id, subscription_id, product_id, unit_price, usage_type, usage_limit)
       SELECT $1, s, $2, 0.01, 'metered', 1000000 FROM unnest($3::bigint[]) AS s
       RETURNING id, subscription_id`,
      [org.id, productId, subscriptions.slice(0, settings.customers).map((s) => s.id)],
    );
    const ingestSubscription = subscriptions[settings.customers]!.id;
    const { rows: ingestItems } = await db.query<{ id: number }>(
      `INSERT INTO subscription_items (org_id, subscription_id, product_id, unit_price, usage_type)
       SELECT $1, $2, $3, 0.01, 'metered' FROM generate_series(1, $4) RETURNING id`,
      [org.id, ingestSubscription, productId, settings.items],
    );
    const customerOf = new Map(subscriptions.map((s) => [s.id, s.customer_id]));
    return {
      apiKey,
      productId,
      customerIds: items.map((item) => customerOf.get(item.subscription_id)!),
      customerItems: items.map((item) => item.id),
      ingestItems: ingestItems.map((item) => item.id),
    };
  } finally {
    await db.close();
  }
}

async function startService(entry: string, env: Record<string, string | undefined>, portVar: string) {
  const port = await freePort();
  const child = spawnEntry(entry, {
    env: { ...env, [portVar]: String(port) },
    nodeArgs: benchNodeFlags(entry),
  });
  await waitUntilReady(`http://127.0.0.1:${port}/readyz`, child);
  return { port, child };
}

async function check(setup: Setup, env: Record<string, string | undefined>): Promise<void> {
  const api = await startService('services/api/main.ts', env, 'PORT');
  const ingestService = await startService(
    'services/ingest/main.ts',
    { ...env, INGEST_TRUSTED_PROXY: 'true' },
    'INGEST_PORT',
  );
  const sinks = await startService('services/ingest/sinks.ts', env, 'SINKS_PORT');
  const headers = { authorization: `Bearer ${setup.apiKey}` };
  const base = `http://127.0.0.1:${api.port}`;
  // ten events per customer's item through the ingest service
  const ingestUrl = `http://127.0.0.1:${ingestService.port}${BASE_PATH}/usage/events/batch`;
  for (let at = 0; at < setup.customerItems.length; at += 100) {
    const events = setup.customerItems.slice(at, at + 100).flatMap((item) =>
      Array.from({ length: 10 }, (_, n) => ({
        subscription_item_id: item,
        quantity: 1,
        idempotency_key: `seed-${item}-${n}`,
      })),
    );
    const response = await fetch(ingestUrl, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    if (!response.ok) throw new Error(`seeding usage: ${response.status} ${await response.text()}`);
  }
  const paths = setup.customerIds.map((id) => `${BASE_PATH}/customers/${id}/entitlements/${setup.productId}`);
  // every counter built once (a rebuild waits for the log and the pg-sink), and checked
  const started = Date.now();
  await Promise.all(
    paths.map(async (path) => {
      const response = await fetch(`${base}${path}`, { headers });
      const body = (await response.json()) as { data?: { used: string; has_access: boolean } };
      if (body.data?.used !== '10.00000000' || !body.data.has_access)
        throw new Error(`${path}: ${JSON.stringify(body)}`);
    }),
  );
  log(`${paths.length} counters built in ${Date.now() - started} ms, each used = 10`);
  const variants = paths.map((path) => requestBytes(`${base}${path}`, { headers }));
  const requests = [randomRequest(variants)];
  const clients = `${settings.connections} clients`;
  loads.push(
    await load(
      'check',
      `${clients}, saturated`,
      { url: base, connections: settings.connections, requests },
      api.child,
    ),
  );
  loads.push(
    await load(
      'check',
      `${clients}, ${settings.checkRate}/s paced evenly`,
      {
        url: base,
        connections: settings.connections,
        requests,
        paced: () => variants[Math.floor(Math.random() * variants.length)]!,
      },
      api.child,
    ),
  );
  loads.push(
    await load(
      'check',
      `${clients}, ${settings.checkRate}/s by autocannon (bursts)`,
      { url: base, connections: settings.connections, requests, overallRate: settings.checkRate },
      api.child,
    ),
  );
  await Promise.all([stopProcess(api.child), stopProcess(ingestService.child), stopProcess(sinks.child)]);
}

async function ingest(setup: Setup, env: Record<string, string | undefined>): Promise<void> {
  const order: boolean[] = [];
  for (let round = 0; round < settings.rounds; round++)
    order.push(...(round % 2 ? [true, false] : [false, true]));
  for (const [n, counter] of order.entries()) {
    const service = await startService(
      'services/ingest/main.ts',
      { ...env, INGEST_TRUSTED_PROXY: 'true', USAGE_COUNTER: String(counter) },
      'INGEST_PORT',
    );
    const url = `http://127.0.0.1:${service.port}${BASE_PATH}/usage/events`;
    const headers = {
      authorization: `Bearer ${setup.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': KEY_SLOT,
    };
    loads.push(
      await load(
        'ingest',
        counter ? 'with the per-item counter' : 'without (USAGE_COUNTER=false)',
        {
          url,
          connections: settings.ingestConnections,
          requests: [
            freshKeyRequest(
              url,
              `r${n}-${Date.now().toString(36)}-`,
              setup.ingestItems.map((item) => ({
                method: 'POST',
                headers,
                body: `{"subscription_item_id":${item},"quantity":1}`,
              })),
            ),
          ],
        },
        service.child,
      ),
    );
    await stopProcess(service.child);
  }
}

async function load(
  scenario: string,
  variant: string,
  options: Omit<AutocannonOptions, 'duration'> & { paced?: () => Buffer },
  server: ChildProcess,
): Promise<Load> {
  const machineBusyBefore = await waitForQuietMachine(0.3, 10_000);
  log(
    `${scenario} (${variant}): machine ${Math.round(machineBusyBefore * 100)}% busy; warm-up ${settings.warmupSeconds} s, then ${settings.durationSeconds} s`,
  );
  const { paced, ...autocannonOptions } = options;
  const run = async (seconds: number) => {
    if (!paced) {
      const timeline = new LatencyTimeline();
      const running = autocannon({ ...autocannonOptions, duration: seconds });
      const started = performance.now();
      running.on('response', (_client, _status, _bytes, latencyMs) =>
        timeline.add(performance.now() - latencyMs - started, latencyMs),
      );
      return { ...(await running), timeline: timeline.summary() };
    }
    const result = await pacedLoad({
      port: Number(new URL(options.url).port),
      rate: settings.checkRate,
      seconds,
      connections: options.connections ?? 1,
      next: paced,
    });
    const ok = result.statuses[200] ?? 0;
    return {
      '2xx': ok,
      duration: result.seconds,
      latency: result.latencyMs,
      requests: { total: result.answered + result.unsent },
      non2xx: result.answered - ok,
      errors: result.unsent,
      timeouts: 0,
      timeline: result.timeline,
    };
  };
  if (settings.warmupSeconds) await run(settings.warmupSeconds);
  const snapshot = async () => {
    const self = process.cpuUsage();
    return [
      await cpuSeconds(server.pid),
      await cpuSeconds(redisPid),
      await postgresCpuSeconds(runId),
      (self.user + self.system) / 1e6,
      await redisCalls(),
    ];
  };
  const before = await snapshot();
  const result = await run(settings.durationSeconds);
  const after = await snapshot();
  log(`${scenario} (${variant}): ${timelineLine(result.timeline)}`);
  const perRequest = (i: number, scale: number) =>
    ((after[i]! - before[i]!) * scale) / Math.max(1, result['2xx']);
  const micros = (i: number) => Math.round(perRequest(i, 1e6));
  return {
    scenario,
    variant,
    machineBusyBefore,
    requestsPerSecond: result['2xx'] / result.duration,
    p50Ms: result.latency.p50,
    p90Ms: result.latency.p90,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    serverCpuMicrosPerRequest: micros(0),
    redisCpuMicrosPerRequest: micros(1),
    postgresCpuMicrosPerRequest: micros(2),
    loaderCpuMicrosPerRequest: micros(3),
    // less the INFO call that reads the count
    redisCallsPerRequest: Math.round(((after[4]! - before[4]! - 1) / Math.max(1, result['2xx'])) * 100) / 100,
    timeline: result.timeline,
  };
}

/**
 * Calls the run's Redis has taken so far: INFO commandstats counts a script's inner commands too,
 * so those a script runs (those of the project's scripts) are left out.
 */
async function redisCalls(): Promise<number> {
  if (!redisClient) return 0;
  const info = await redisClient.info('commandstats');
  let calls = 0;
  for (const [, command, count] of info.matchAll(/cmdstat_([a-z|_-]+):calls=(\d+)/g)) {
    if (!SCRIPT_INNER_COMMANDS.has(command!)) calls += Number(count);
  }
  return calls;
}

function evaluate(): { bar: string; measured: string; pass: boolean | undefined }[] {
  const bars: { bar: string; measured: string; pass: boolean | undefined }[] = [];
  for (const l of loads) {
    if (l.non2xx + l.errors > 0)
      bars.push({
        bar: `${l.scenario} ${l.variant}: every response 2xx`,
        measured: `${l.non2xx} non-2xx, ${l.errors} errors`,
        pass: false,
      });
  }
  // autocannon's pacing is shown, not judged: its bursts measure a saturated api
  for (const checked of loads.filter((l) => l.scenario === 'check' && !l.variant.includes('bursts'))) {
    bars.push({
      bar: `entitlement check p99 <= ${BARS.checkP99Ms} ms (${checked.variant})`,
      measured: `${checked.p99Ms} ms (p50 ${checked.p50Ms}, p90 ${checked.p90Ms}; ${checked.requestsPerSecond.toFixed(0)} req/s)`,
      pass: checked.p99Ms <= BARS.checkP99Ms,
    });
  }
  // the ingest loads run in rounds of two, one with the counter and one without (ingest())
  const ingestLoads = loads.filter((l) => l.scenario === 'ingest');
  const rounds: { variant: number; baseline: number }[] = [];
  for (let i = 0; i + 1 < ingestLoads.length; i += 2) {
    const pair = ingestLoads.slice(i, i + 2);
    const withCounter = pair.find((l) => l.variant.startsWith('with '));
    const without = pair.find((l) => !l.variant.startsWith('with '));
    if (withCounter && without)
      rounds.push({ variant: withCounter.requestsPerSecond, baseline: without.requestsPerSecond });
  }
  if (rounds.length) {
    const share = pairedShare(rounds);
    const percent = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
    bars.push({
      bar: `single-event ingest with the counter >= ${BARS.counterShareOfBaseline * 100}% of without (median of the rounds' pairs)`,
      measured:
        `${percent(share.medianOfRounds)} (rounds: ${share.byRound.map(percent).join(', ')}; ` +
        `ratio of the means ${percent(share.ofMeans)}; ` +
        rounds.map((r) => `${r.variant.toFixed(0)} vs ${r.baseline.toFixed(0)}`).join(', ') +
        ' events/s)',
      pass: share.medianOfRounds >= BARS.counterShareOfBaseline,
    });
  }
  return bars;
}
