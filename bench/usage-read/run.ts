/**
 * `npm run bench:usage-read`: the usage read-back (issue 23, docs/architecture.md, "The usage read-back"), three parts.
 *
 *   clickhouse  GET /subscriptions/{id}/usage of a subscription with BENCH_EVENTS events (default
 *               5,000,000) in ClickHouse and in Postgres (with the pg-sink's daily totals, which the
 *               read-back reads), the api in the distributed mode (Kafka test broker, sinks running,
 *               as_of from their watermark), BENCH_CONNECTIONS clients (default 20), beside GET
 *               /customers/{id} on the same api in the same run. Bar: /usage p99 <= 50 ms. Also times
 *               ClickHouse's aggregation of those events (the billing run's), FINAL + sumIf and argMax.
 *   freshness   while the ingest service takes BENCH_INGEST_RATE events/s (default 5,000) for
 *               BENCH_FRESHNESS_SECONDS (default 60) with the sinks running, a marker event is sent
 *               every second and /usage polled every BENCH_POLL_MS (default 25) until it counts it.
 *               The figure is the time from the marker's 201 to the first /usage answer counting
 *               it (not to when it reached a store). Bar: p99 <= 2 s.
 *   embedded    GET /subscriptions/{id}/usage over BENCH_EMBEDDED_EVENTS (default 200,000) events in
 *               Postgres, the api in the embedded mode (in-process log, totals from Postgres).
 *               Bar: p99 <= 200 ms.
 *
 * Beside each /usage load, GET /customers/{id}/credit-balance of the customer holding those
 * subscriptions and three credit grants (issue 33): its `pending` previews every upcoming invoice
 * of the customer. Bars: p99 <= 50 ms distributed, <= 200 ms embedded.
 *
 * Each load runs BENCH_DURATION_SECONDS (default 10) after BENCH_WARMUP_SECONDS (default 2). The
 * report goes to bench/results/usage-read-<time>.json. Settings (env): BENCH_SCENARIOS (comma
 * list), DATABASE_URL (admin URL; bench_usage_read_<pid> databases are created and dropped),
 * REDIS_URL, CLICKHOUSE_URL (a database of the run's name is created and dropped).
 */
import { createApiKey } from '../../libs/auth/index.js';
import { createCreditGrant } from '../../libs/billing/index.js';
import { createProduct } from '../../libs/catalog/index.js';
import { openClickHouse } from '../../libs/clickhouse/index.js';
import { createCustomer } from '../../libs/customers/index.js';
import { Database, migrate } from '../../libs/db/index.js';
import { createOrganization, setRateLimitOverride } from '../../libs/organizations/index.js';
import { BASE_PATH, CreateCustomer } from '../../libs/schemas/index.js';
import { createSubscription } from '../../libs/subscriptions/index.js';
import { migrateClickHouse } from '../../libs/usage/index.js';
import {
  autocannon,
  commandCpuSeconds,
  cpuSeconds,
  createDatabase,
  dropClickHouseDatabase,
  dropDatabase,
  freePort,
  freshKeyRequest,
  intEnv,
  KEY_SLOT,
  logger,
  printBars,
  printTable,
  randomRequest,
  requestBytes,
  scenariosEnv,
  spawnEntry,
  startKafkaTestBrokerProcess,
  stopChildren,
  waitUntilReady,
  writeReport,
} from '../support.js';

const SCENARIOS = ['clickhouse', 'freshness', 'embedded'] as const;

const settings = {
  events: intEnv('BENCH_EVENTS', 5_000_000),
  embeddedEvents: intEnv('BENCH_EMBEDDED_EVENTS', 200_000),
  connections: intEnv('BENCH_CONNECTIONS', 20),
  durationSeconds: intEnv('BENCH_DURATION_SECONDS', 10),
  warmupSeconds: intEnv('BENCH_WARMUP_SECONDS', 2),
  ingestRate: intEnv('BENCH_INGEST_RATE', 5000),
  freshnessSeconds: intEnv('BENCH_FRESHNESS_SECONDS', 60),
  pollMs: intEnv('BENCH_POLL_MS', 25, 1),
  scenarios: scenariosEnv(SCENARIOS),
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  clickhouseUrl: process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:8123',
};
const BARS = {
  clickhouseP99Ms: 50,
  freshnessP99Ms: 2000,
  embeddedP99Ms: 200,
  balanceP99Ms: 50,
  embeddedBalanceP99Ms: 200,
};
/** Runs of each ClickHouse aggregation timed alone. */
const QUERY_RUNS = 7;
const DAY = 86_400_000;

const runId = `bench_usage_read_${process.pid}`;
const embeddedDb = `${runId}_embedded`;
const log = logger('usage-read');

interface LoadResult {
  scenario: string;
  request: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  errors: number;
  cpuMicrosPerRequest: { api: number; postgres: number; clickhouse: number };
}

interface Setup {
  apiKey: string;
  orgId: number;
  customerIds: number[];
  /** The subscription read by /usage, its metered item, and the items the load and markers use. */
  big: { subscriptionId: number; itemId: number; periodStart: Date };
  marker: { subscriptionId: number; itemId: number };
  load: { itemId: number };
}

/** The part of GET /subscriptions/{id}/usage the bench reads. */
interface UsageAnswer {
  data: { as_of: string; items: { quantity: string }[] };
}

const loads: LoadResult[] = [];
const extra: Record<string, unknown> = {};

try {
  await main();
} finally {
  await stopChildren('SIGKILL');
  await cleanUp();
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify(settings)}`);
  const distributed = settings.scenarios.some((s) => s === 'clickhouse' || s === 'freshness');
  if (distributed) await runDistributed();
  if (settings.scenarios.includes('embedded')) await runEmbedded();

  const bars = evaluate();
  printTable(
    [
      'scenario',
      'request',
      'req/s',
      'p50 ms',
      'p99 ms',
      'max ms',
      'responses',
      'CPU µs/req: api',
      'postgres',
      'clickhouse',
    ],
    loads.map((r) => [
      r.scenario,
      r.request,
      r.requestsPerSecond.toFixed(0),
      r.p50Ms,
      r.p99Ms,
      r.maxMs,
      r.non2xx + r.errors > 0 ? `${r.non2xx + r.errors} failed` : 'ok',
      r.cpuMicrosPerRequest.api,
      r.cpuMicrosPerRequest.postgres,
      r.cpuMicrosPerRequest.clickhouse,
    ]),
  );
  if (extra.freshness) {
    const f = extra.freshness as Record<string, number>;
    console.log(
      `\nfreshness: ${f.markers} markers, lag p50 ${f.p50Ms} ms, p99 ${f.p99Ms} ms, max ${f.maxMs} ms; ` +
        `ingest ${f.ingestedPerSecond} events/s accepted (${f.ingestNon2xx} refused); ` +
        `CPU s over the window: broker ${f.brokerCpuSeconds}, sinks ${f.sinksCpuSeconds}, ingest ${f.ingestCpuSeconds}`,
    );
  }
  if (extra.queries)
    console.log(
      `ClickHouse aggregation alone, one at a time (ms, p50/max of ${QUERY_RUNS}): ${JSON.stringify(extra.queries)}`,
    );
  printBars(bars);
  const file = await writeReport('usage-read', { settings, loads, ...extra, bars });
  log(`report: ${file}`);
  if (bars.some((bar) => bar.pass === false)) process.exitCode = 1;
}

/** An organization with customers, the big subscription, the marker's and the load's. */
async function prepare(db: Database, periodStart: Date): Promise<Setup> {
  const org = await createOrganization(db, { name: 'Bench usage read', plan: 'scale' });
  await setRateLimitOverride(db, org.id, 2_000_000_000);
  const apiKey = (await createApiKey(db, { orgId: org.id, name: 'bench' })).api_key;
  const customerIds: number[] = [];
  for (let i = 0; i < 500; i++) {
    const customer = await createCustomer(
      db,
      org.id,
      CreateCustomer.parse({ name: `Customer ${i}`, country: 'CA', state_province: 'QC' }),
    );
    customerIds.push(customer.id);
  }
  const product = await createProduct(db, org.id, {
    name: 'API calls',
    pricing_type: 'usage',
    pricing_mode: 'graduated',
    currency: 'CAD',
    unit_label: 'call',
    tiers: [
      { up_to: '1000000', unit_price: '0.001' },
      { up_to: null, unit_price: '0.0005' },
    ],
  });
  const subscribe = async () => {
    const subscription = await createSubscription(
      db,
      org.id,
      {
        customer_id: customerIds[0]!,
        items: [{ product_id: product.id, included_units: '1000' }],
        start_date: periodStart,
      },
      { now: periodStart },
    );
    return { subscriptionId: subscription.id, itemId: subscription.items[0]!.id };
  };
  const big = await subscribe();
  // three grants for the customer of every subscription here: what its credit balance reads
  for (const [amount, priority, expires] of [
    ['50.00', 10, new Date(Date.now() + 30 * DAY)],
    ['200.00', 50, undefined],
    ['1000.00', 90, new Date(Date.now() + 365 * DAY)],
  ] as const) {
    await db.transaction((tx) =>
      createCreditGrant(tx, {
        orgId: org.id,
        customerId: customerIds[0]!,
        input: { amount, category: 'promotional', priority, expires_at: expires?.toISOString() },
      }),
    );
  }
  return {
    apiKey,
    orgId: org.id,
    customerIds,
    big: { ...big, periodStart },
    marker: await subscribe(),
    load: { itemId: (await subscribe()).itemId },
  };
}

async function runDistributed(): Promise<void> {
  const databaseUrl = await createDatabase(runId);
  const db = new Database(databaseUrl, { poolSize: 2 });
  // the running period began ten days ago (a month-long period holds now)
  const periodStart = new Date(Math.floor((Date.now() - 10 * DAY) / DAY) * DAY);
  let setup: Setup;
  try {
    await migrate(db);
    setup = await prepare(db, periodStart);
  } finally {
    await db.close();
  }

  const clickhouse = openClickHouse({ url: settings.clickhouseUrl, database: runId });
  await migrateClickHouse(clickhouse);
  const loadStart = Date.now();
  const spanSeconds = Math.floor((Date.now() - periodStart.getTime()) / 1000) - 60;
  // 5M rows generated by ClickHouse itself: quantity 1..10, spread over the period so far
  await clickhouse.command(
    `INSERT INTO ${runId}.usage_events
       (org_id, subscription_item_id, idempotency_key, id, quantity, occurred_at, occurred_ms, recorded_at, recorded_ms, version)
     SELECT ${setup.orgId}, ${setup.big.itemId}, concat('bench-', toString(number)), generateUUIDv4(),
            toDecimal128(number % 10 + 1, 8), toDateTime(${periodStart.getTime() / 1000} + number % ${spanSeconds}, 'UTC'),
            0, now(), 0, 1
       FROM numbers(${settings.events})`,
  );
  await clickhouse.command(`OPTIMIZE TABLE ${runId}.usage_events FINAL`).catch(() => {});
  const expected = (BigInt(settings.events) / 10n) * 55n + sumFirst(settings.events % 10);
  log(`${settings.events} events in ClickHouse in ${((Date.now() - loadStart) / 1000).toFixed(1)} s`);
  // ...and the same events in Postgres, with the daily totals the pg-sink keeps beside them: the
  // read-back's store (docs/decisions.md). Generated by Postgres itself, as the sink would write them.
  const pgStart = Date.now();
  const pg = new Database(databaseUrl, { poolSize: 1 });
  try {
    await insertEvents(pg, setup, periodStart, settings.events);
  } finally {
    await pg.close();
  }
  log(`${settings.events} events in Postgres in ${((Date.now() - pgStart) / 1000).toFixed(1)} s`);

  const broker = await startKafkaTestBrokerProcess();
  const topic = `${runId}_usage`;
  await broker.createTopic(topic, 8);
  const env = {
    APP_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '20',
    REDIS_URL: settings.redisUrl,
    REDIS_KEY_PREFIX: `${runId}:`,
    KAFKA_BROKERS: broker.bootstrap,
    KAFKA_USAGE_TOPIC: topic,
    KAFKA_TOPIC_PARTITIONS: '8',
    KAFKA_CONSUMER_GROUP_PREFIX: `${runId}-`,
    CLICKHOUSE_URL: settings.clickhouseUrl,
    CLICKHOUSE_DATABASE: runId,
  };
  const apiPort = await freePort();
  const api = spawnEntry('services/api/main.ts', { env: { ...env, PORT: String(apiPort) } });
  const sinksPort = await freePort();
  const sinks = spawnEntry('services/ingest/sinks.ts', {
    env: { ...env, SINKS_PORT: String(sinksPort), SINK_FLUSH_MS: '200', SINK_BATCH_SIZE: '5000' },
  });
  const ingestPort = await freePort();
  const ingest = spawnEntry('services/ingest/main.ts', {
    env: { ...env, INGEST_PORT: String(ingestPort), INGEST_TRUSTED_PROXY: 'true' },
  });
  const apiBase = `http://127.0.0.1:${apiPort}`;
  await Promise.all([
    waitUntilReady(`${apiBase}/readyz`, api),
    waitUntilReady(`http://127.0.0.1:${sinksPort}/readyz`, sinks),
    waitUntilReady(`http://127.0.0.1:${ingestPort}/readyz`, ingest),
  ]);
  const headers = { authorization: `Bearer ${setup.apiKey}` };
  const usagePath = `${BASE_PATH}/subscriptions/${setup.big.subscriptionId}/usage`;
  const check = (await (await fetch(`${apiBase}${usagePath}`, { headers })).json()) as UsageAnswer;
  const quantity = check.data?.items?.[0]?.quantity;
  if (quantity !== `${expected}.00000000`)
    throw new Error(`/usage answered ${JSON.stringify(check)}, expected ${expected}`);
  log(`/usage counts the ${settings.events} events: ${quantity}; as_of ${check.data.as_of}`);

  if (settings.scenarios.includes('clickhouse')) {
    extra.queries = await timeQueries(clickhouse, setup, periodStart);
    loads.push(
      await load(
        'clickhouse',
        `GET /subscriptions/{id}/usage (${settings.events} events, distributed)`,
        apiBase,
        [usagePath],
        headers,
        api.pid,
      ),
    );
    loads.push(
      await load(
        'clickhouse',
        `GET /customers/{id}/credit-balance (${settings.events} events, distributed)`,
        apiBase,
        [`${BASE_PATH}/customers/${setup.customerIds[0]}/credit-balance`],
        headers,
        api.pid,
      ),
    );
    loads.push(
      await load(
        'clickhouse',
        'GET /customers/{id}',
        apiBase,
        setup.customerIds.map((id) => `${BASE_PATH}/customers/${id}`),
        headers,
        api.pid,
      ),
    );
  }
  if (settings.scenarios.includes('freshness')) {
    extra.freshness = await freshness(apiBase, ingestPort, setup, headers, {
      broker: broker.pid,
      sinks: sinks.pid,
      ingest: ingest.pid,
    });
  }
  await clickhouse.close();
  await stopChildren('SIGKILL');
}

/** `count` events of the big subscription (quantity 1..10), and their daily totals, as the sinks write them. */
async function insertEvents(db: Database, setup: Setup, periodStart: Date, count: number): Promise<void> {
  const spanSeconds = Math.floor((Date.now() - periodStart.getTime()) / 1000) - 60;
  await db.query(
    `INSERT INTO usage_events (id, org_id, subscription_item_id, idempotency_key, quantity, occurred_at, recorded_at)
     SELECT gen_random_uuid(), $1, $2, 'bench-' || n, n % 10 + 1, $3::timestamptz + (n % $4) * interval '1 second', now()
       FROM generate_series(0, $5 - 1) AS n`,
    [setup.orgId, setup.big.itemId, periodStart, spanSeconds, count],
  );
  await db.query(
    `INSERT INTO usage_daily_totals (org_id, subscription_item_id, day, quantity)
     SELECT org_id, subscription_item_id, (occurred_at AT TIME ZONE 'UTC')::date, sum(quantity)
       FROM usage_events GROUP BY 1, 2, 3`,
  );
  await db.query('ANALYZE usage_events');
}

function sumFirst(n: number): bigint {
  return BigInt((n * (n + 1)) / 2);
}

/** The aggregation query alone, both ways: FINAL with sumIf (what the code runs) and argMax. */
async function timeQueries(
  clickhouse: ReturnType<typeof openClickHouse>,
  setup: Setup,
  periodStart: Date,
): Promise<Record<string, { p50: number; max: number; total: string }>> {
  const where = `org_id = ${setup.orgId} AND subscription_item_id IN (${setup.big.itemId})
      AND occurred_at >= toDateTime(${periodStart.getTime() / 1000}, 'UTC') AND occurred_at <= now()`;
  const queries = {
    final_sumIf: `SELECT subscription_item_id, toString(sumIf(quantity, voided = 0)) AS total
                    FROM ${runId}.usage_events FINAL WHERE ${where} GROUP BY subscription_item_id`,
    argMax: `SELECT item, toString(sum(q)) AS total FROM (
               SELECT subscription_item_id AS item, argMax(quantity, version) AS q, argMax(voided, version) AS v
                 FROM ${runId}.usage_events WHERE ${where} GROUP BY subscription_item_id, idempotency_key)
             WHERE v = 0 GROUP BY item`,
  };
  const out: Record<string, { p50: number; max: number; total: string }> = {};
  for (const [name, sql] of Object.entries(queries)) {
    const times: number[] = [];
    let total = '';
    for (let i = 0; i < QUERY_RUNS; i++) {
      const started = performance.now();
      const rows = await clickhouse.rows<{ total: string }>(sql);
      times.push(performance.now() - started);
      total = rows[0]?.total ?? '';
    }
    times.sort((a, b) => a - b);
    out[name] = {
      p50: Math.round(times[Math.floor(QUERY_RUNS / 2)]!),
      max: Math.round(times[QUERY_RUNS - 1]!),
      total,
    };
  }
  return out;
}

async function load(
  scenario: string,
  request: string,
  base: string,
  paths: string[],
  headers: Record<string, string>,
  apiPid: number | undefined,
): Promise<LoadResult> {
  const options = {
    url: base,
    connections: settings.connections,
    requests: [randomRequest(paths.map((p) => requestBytes(`${base}${p}`, { headers })))],
  };
  log(`${scenario} ${request}: warm-up ${settings.warmupSeconds} s, then ${settings.durationSeconds} s`);
  if (settings.warmupSeconds) await autocannon({ ...options, duration: settings.warmupSeconds });
  const before = [
    await cpuSeconds(apiPid),
    await commandCpuSeconds('postgres'),
    await commandCpuSeconds('clickhouse'),
  ];
  const result = await autocannon({ ...options, duration: settings.durationSeconds });
  const after = [
    await cpuSeconds(apiPid),
    await commandCpuSeconds('postgres'),
    await commandCpuSeconds('clickhouse'),
  ];
  const micros = (i: number) =>
    Math.round(((after[i]! - before[i]!) * 1e6) / Math.max(1, result.requests.total));
  return {
    scenario,
    request,
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    cpuMicrosPerRequest: { api: micros(0), postgres: micros(1), clickhouse: micros(2) },
  };
}

/**
 * Ingest at the set rate through the ingest service while, each second, a marker event goes to a
 * subscription of its own and /usage of that subscription is polled until it counts it: the lag
 * is from the marker's 201 to the first answer counting it.
 */
async function freshness(
  apiBase: string,
  ingestPort: number,
  setup: Setup,
  headers: Record<string, string>,
  pids: { broker: number | undefined; sinks: number | undefined; ingest: number | undefined },
) {
  const ingestUrl = `http://127.0.0.1:${ingestPort}`;
  const loadRun = autocannon({
    url: ingestUrl,
    connections: 20,
    duration: settings.freshnessSeconds,
    overallRate: settings.ingestRate,
    requests: [
      freshKeyRequest(`${ingestUrl}${BASE_PATH}/usage/events`, `fresh-${process.pid}-`, [
        {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': KEY_SLOT },
          body: JSON.stringify({ subscription_item_id: setup.load.itemId, quantity: 1 }),
        },
      ]),
    ],
  });
  const cpuBefore = [
    await cpuSeconds(pids.broker),
    await cpuSeconds(pids.sinks),
    await cpuSeconds(pids.ingest),
  ];
  const started = Date.now();
  const lags: number[] = [];
  const usageUrl = `${apiBase}${BASE_PATH}/subscriptions/${setup.marker.subscriptionId}/usage`;
  for (let marker = 1; Date.now() - started < (settings.freshnessSeconds - 3) * 1000; marker++) {
    const tick = Date.now();
    const response = await fetch(`${ingestUrl}${BASE_PATH}/usage/events`, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        'idempotency-key': `marker-${process.pid}-${marker}`,
      },
      body: JSON.stringify({ subscription_item_id: setup.marker.itemId, quantity: 1 }),
    });
    const answered = Date.now();
    if (response.status !== 201)
      throw new Error(`marker ${marker}: ${response.status} ${await response.text()}`);
    for (;;) {
      const answer = await fetch(usageUrl, { headers });
      if (answer.status !== 200) throw new Error(`/usage answered ${answer.status}: ${await answer.text()}`);
      const usage = (await answer.json()) as UsageAnswer;
      if (Number(usage.data.items[0]!.quantity) >= marker) {
        lags.push(Date.now() - answered);
        break;
      }
      if (Date.now() - answered > 30_000) throw new Error(`marker ${marker} not counted after 30 s`);
      await new Promise((resolve) => setTimeout(resolve, settings.pollMs));
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 - (Date.now() - tick))));
  }
  const result = await loadRun;
  const cpuAfter = [
    await cpuSeconds(pids.broker),
    await cpuSeconds(pids.sinks),
    await cpuSeconds(pids.ingest),
  ];
  lags.sort((a, b) => a - b);
  const at = (q: number) => lags[Math.min(lags.length - 1, Math.ceil(q * lags.length) - 1)]!;
  return {
    markers: lags.length,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxMs: lags[lags.length - 1]!,
    ingestedPerSecond: Math.round(result['2xx'] / settings.freshnessSeconds),
    ingestNon2xx: result.non2xx,
    brokerCpuSeconds: round(cpuAfter[0]! - cpuBefore[0]!),
    sinksCpuSeconds: round(cpuAfter[1]! - cpuBefore[1]!),
    ingestCpuSeconds: round(cpuAfter[2]! - cpuBefore[2]!),
  };
}

async function runEmbedded(): Promise<void> {
  const databaseUrl = await createDatabase(embeddedDb);
  const db = new Database(databaseUrl, { poolSize: 2 });
  const periodStart = new Date(Math.floor((Date.now() - 10 * DAY) / DAY) * DAY);
  let setup: Setup;
  try {
    await migrate(db);
    setup = await prepare(db, periodStart);
    await insertEvents(db, setup, periodStart, settings.embeddedEvents);
  } finally {
    await db.close();
  }
  log(`${settings.embeddedEvents} events in Postgres`);
  const apiPort = await freePort();
  const api = spawnEntry('services/api/main.ts', {
    env: {
      APP_ENV: 'production',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(apiPort),
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_SIZE: '20',
      // the embedded mode's stores: no Redis, no Kafka, no ClickHouse
      REDIS_URL: undefined,
      KAFKA_BROKERS: undefined,
      CLICKHOUSE_URL: undefined,
    },
  });
  const apiBase = `http://127.0.0.1:${apiPort}`;
  await waitUntilReady(`${apiBase}/readyz`, api);
  const headers = { authorization: `Bearer ${setup.apiKey}` };
  const usagePath = `${BASE_PATH}/subscriptions/${setup.big.subscriptionId}/usage`;
  loads.push(
    await load(
      'embedded',
      `GET /subscriptions/{id}/usage (${settings.embeddedEvents} events, Postgres)`,
      apiBase,
      [usagePath],
      headers,
      api.pid,
    ),
  );
  loads.push(
    await load(
      'embedded',
      `GET /customers/{id}/credit-balance (${settings.embeddedEvents} events, Postgres)`,
      apiBase,
      [`${BASE_PATH}/customers/${setup.customerIds[0]}/credit-balance`],
      headers,
      api.pid,
    ),
  );
  await stopChildren('SIGKILL');
}

interface Bar {
  bar: string;
  measured: string;
  pass: boolean | undefined;
}

function evaluate(): Bar[] {
  const bars: Bar[] = [];
  for (const r of loads) {
    if (r.non2xx + r.errors > 0) {
      bars.push({
        bar: `${r.request}: every response 2xx`,
        measured: `${r.non2xx} non-2xx, ${r.errors} errors`,
        pass: false,
      });
    }
  }
  const usage = loads.find((r) => r.scenario === 'clickhouse' && r.request.startsWith('GET /subscriptions'));
  const customer = loads.find((r) => r.request === 'GET /customers/{id}');
  if (usage) {
    bars.push({
      bar: `/usage with ${settings.events} events (distributed) p99 <= ${BARS.clickhouseP99Ms} ms (${settings.connections} clients)`,
      measured: `${usage.p99Ms} ms (GET /customers/{id} beside it: ${customer?.p99Ms ?? '-'} ms)`,
      pass: usage.p99Ms <= BARS.clickhouseP99Ms,
    });
  }
  const fresh = extra.freshness as { p99Ms: number; markers: number; ingestedPerSecond: number } | undefined;
  if (fresh) {
    bars.push({
      bar: `freshness p99 <= ${BARS.freshnessP99Ms} ms at ${settings.ingestRate} events/s`,
      measured: `${fresh.p99Ms} ms over ${fresh.markers} markers (${fresh.ingestedPerSecond} events/s accepted)`,
      pass: fresh.p99Ms <= BARS.freshnessP99Ms,
    });
  }
  const balance = loads.find((r) => r.scenario === 'clickhouse' && r.request.includes('credit-balance'));
  if (balance) {
    bars.push({
      bar: `credit-balance with ${settings.events} events (distributed) p99 <= ${BARS.balanceP99Ms} ms (${settings.connections} clients)`,
      measured: `${balance.p99Ms} ms`,
      pass: balance.p99Ms <= BARS.balanceP99Ms,
    });
  }
  const embeddedBalance = loads.find(
    (r) => r.scenario === 'embedded' && r.request.includes('credit-balance'),
  );
  if (embeddedBalance) {
    bars.push({
      bar: `embedded credit-balance over ${settings.embeddedEvents} events p99 <= ${BARS.embeddedBalanceP99Ms} ms`,
      measured: `${embeddedBalance.p99Ms} ms`,
      pass: embeddedBalance.p99Ms <= BARS.embeddedBalanceP99Ms,
    });
  }
  const embedded = loads.find((r) => r.scenario === 'embedded' && r.request.includes('/usage'));
  if (embedded) {
    bars.push({
      bar: `embedded /usage over ${settings.embeddedEvents} events p99 <= ${BARS.embeddedP99Ms} ms`,
      measured: `${embedded.p99Ms} ms`,
      pass: embedded.p99Ms <= BARS.embeddedP99Ms,
    });
  }
  return bars;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

async function cleanUp(): Promise<void> {
  await dropDatabase(runId, log);
  await dropDatabase(embeddedDb, log);
  await dropClickHouseDatabase(settings.clickhouseUrl, runId, log);
}
