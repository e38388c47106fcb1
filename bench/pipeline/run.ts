/**
 * `npm run bench:pipeline`: the whole usage pipeline on this one machine (issue 38), every process
 * measured. Parts (BENCH_PARTS, comma list, default the first three, in this order):
 *
 *   pipeline  distributed mode with everything running: the ingest service (uWS), the sinks
 *             (pg-sink and ch-sink), the api (for /usage), a Kafka test broker and a redis-server of
 *             this run, Postgres and ClickHouse. For each kind (single events, batches of
 *             BENCH_BATCH_EVENTS) and each rate of BENCH_RATES (events/s; 0 is the open loop:
 *             BENCH_CONNECTIONS closed-loop connections for single events, BENCH_BATCH_CONNECTIONS
 *             for batches), a load of BENCH_DURATION_SECONDS, then the sinks are waited for until
 *             they committed every accepted event. Fixed rates are paced evenly (paced-load.ts).
 *             Prints, per event accepted: CPU µs of ingest, sinks, broker, Redis, Postgres (the
 *             backends of this run's database and the cluster's own processes), ClickHouse (the
 *             whole server), api and the load generator (this process), over the load and the
 *             catch-up; the accepted rate; the end-to-end latency (a marker event every
 *             BENCH_MARKER_MS on a subscription of its own, from its 201 to the first
 *             GET /subscriptions/{id}/usage counting it, polled every BENCH_POLL_MS); and checks that
 *             every accepted event is exactly once in Postgres and in ClickHouse (rows, exact sums,
 *             Postgres' daily totals equal to its events). Each scenario has an organization of
 *             its own, so its rows are counted apart.
 *   alone     the ingest service alone (Redis, the broker, a topic nobody reads) and a bare uWS
 *             route (bench/ingest/bare-server.ts), closed loop at each of BENCH_ALONE_CONNECTIONS:
 *             events/s, p50/p99 and CPU µs per event, ingest against bare in the same run.
 *   embedded  `npm start` (bin/start-embedded.ts, a fresh DATA_DIR), single events on its ingest
 *             port at each of BENCH_EMBEDDED_CONNECTIONS: events/s, p50/p99, CPU of the process, and
 *             every 201 found in its database.
 *   insert    asked for by name only: the pg-sink's write alone, Postgres CPU per event with the
 *             ingest's time-ordered event ids against random ones, alternated (insert-order.ts).
 *
 * Bars (issue 38): end to end, single events, >= 20,000 events/s accepted and counted exactly with
 * the sinks running and <= 70 µs of CPU per event over every process but the load generator;
 * batches >= 60,000 events/s end to end; freshness p99 <= 2 s at 5,000 events/s; ingest alone
 * >= 0.4 of the bare route (at the largest connection count) with p99 <= 25 ms, its CPU per event
 * within 1.5x of the saturated figure (the largest connection count) at 2 connections and 1.25x at
 * 8, p99 <= 5 ms at 1 connection; embedded p50 <= 2 ms at 1 and 4 connections, >= 8,000 events/s
 * at 50.
 *
 * Settings (env, defaults in brackets): BENCH_SHORT=1 (a smoke run: every part, 4 s loads, rates
 * 5000 and open loop, fewer connection counts), BENCH_DURATION_SECONDS [15; short 4],
 * BENCH_WARMUP_SECONDS [3; short 1], BENCH_RATES [2000,5000,10000,0; short 5000,0], BENCH_KINDS
 * [single,batch], BENCH_CONNECTIONS [50], BENCH_PACED_CONNECTIONS [64; connections a fixed rate
 * may use], BENCH_BATCH_EVENTS [1000], BENCH_BATCH_CONNECTIONS [10], BENCH_ALONE_CONNECTIONS
 * [1,2,8,50,100; short 1,8,50], BENCH_EMBEDDED_CONNECTIONS [1,4,50; short 1,4], BENCH_PARTITIONS
 * [12], BENCH_ITEMS [500 metered items per scenario], BENCH_MARKER_MS [100], BENCH_POLL_MS [50],
 * BENCH_CATCHUP_TIMEOUT_SECONDS [600], BENCH_QUIET_SECONDS [30: the longest wait for the machine to
 * quieten before a load], BENCH_IDLE_SECONDS [5: each process's CPU with the pipeline's services
 * started and no load, measured once before the first scenario; 0 skips it], KAFKA_LINGER_MS, SINK_BATCH_SIZE, SINK_FLUSH_MS (passed to the
 * services), DATABASE_URL (admin URL; a database bench_pipeline_<pid> is created and dropped),
 * CLICKHOUSE_URL (a database of the same name is created and dropped), BENCH_SERVICES_FROM (see
 * bench/support.ts), BENCH_PROFILE_DIR (each service writes a V8 CPU profile there). Report:
 * bench/results/pipeline-<time>.json. On this 2-core VM every process shares the two cores with the
 * load generator and whatever else runs: read the CPU per event per process, not only the rates.
 * The scenarios share one topic, and the Kafka test broker finds what a fetch asks for by scanning
 * the partition's log (up to its ~5 MB cut): its CPU per event grows as the run fills the topic, so
 * later scenarios pay more of it than a real Kafka would. For one scenario's clean figure, run it
 * alone (e.g. BENCH_PARTS=pipeline BENCH_KINDS=single BENCH_RATES=0).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiKey } from '../../libs/auth/index.js';
import { createProduct } from '../../libs/catalog/index.js';
import { openClickHouse } from '../../libs/clickhouse/index.js';
import { createCustomer } from '../../libs/customers/index.js';
import { Database, migrate } from '../../libs/db/index.js';
import { type Admin, createKafka } from '../../libs/kafka/index.js';
import { formatScaled, parseScaled } from '../../libs/money/index.js';
import { createOrganization, setRateLimitOverride } from '../../libs/organizations/index.js';
import { BASE_PATH, CreateCustomer } from '../../libs/schemas/index.js';
import { createSubscription } from '../../libs/subscriptions/index.js';
import {
  type AutocannonRequestEntry,
  autocannon,
  benchNodeFlags,
  commandCpuSeconds,
  consumerGroupsCaughtUp,
  cpuSeconds,
  createDatabase,
  dropClickHouseDatabase,
  dropDatabase,
  freePort,
  freshKeyRequest,
  ingestCounters,
  intEnv,
  KEY_SLOT,
  logger,
  percentiles,
  postgresCpuSeconds,
  printBars,
  printTable,
  spawnEntry,
  startKafkaTestBrokerProcess,
  startLoggedProcess,
  startRedisServer,
  stopChildren,
  stopProcess,
  waitForLine,
  waitForQuietMachine,
  writeReport,
} from '../support.js';
import { type InsertOrderResult, printInsertOrder, runInsertOrder } from './insert-order.js';
import { pacedLoad } from './paced-load.js';

const PARTS = ['pipeline', 'alone', 'embedded', 'insert'] as const;
const KINDS = ['single', 'batch'] as const;
type Kind = (typeof KINDS)[number];

const short = process.env.BENCH_SHORT === '1';

/** A comma list of integers (BENCH_RATES and the connection counts); unset means `fallback`. */
function listEnv(name: string, fallback: number[]): number[] {
  const value = process.env[name];
  if (value === undefined || value.trim() === '') return fallback;
  return value.split(',').map((part) => {
    const n = Number(part.trim());
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a comma list of integers >= 0`);
    return n;
  });
}

/** The names of `all` a comma list names (unset: all), in the order of `all`. */
function listOf<T extends string>(name: string, all: readonly T[], fallback: readonly T[] = all): T[] {
  const names = (process.env[name] || fallback.join(',')).split(',').map((part) => part.trim());
  return all.filter((value) => names.includes(value));
}

const settings = {
  short,
  parts: listOf('BENCH_PARTS', PARTS, ['pipeline', 'alone', 'embedded']),
  durationSeconds: intEnv('BENCH_DURATION_SECONDS', short ? 4 : 15, 1),
  warmupSeconds: intEnv('BENCH_WARMUP_SECONDS', short ? 1 : 3),
  rates: listEnv('BENCH_RATES', short ? [5000, 0] : [2000, 5000, 10_000, 0]),
  kinds: listOf('BENCH_KINDS', KINDS),
  connections: intEnv('BENCH_CONNECTIONS', 50, 1),
  pacedConnections: intEnv('BENCH_PACED_CONNECTIONS', 64, 1),
  batchEvents: intEnv('BENCH_BATCH_EVENTS', 1000, 1),
  batchConnections: intEnv('BENCH_BATCH_CONNECTIONS', 10, 1),
  aloneConnections: listEnv('BENCH_ALONE_CONNECTIONS', short ? [1, 8, 50] : [1, 2, 8, 50, 100]),
  embeddedConnections: listEnv('BENCH_EMBEDDED_CONNECTIONS', short ? [1, 4] : [1, 4, 50]),
  partitions: intEnv('BENCH_PARTITIONS', 12, 1),
  items: intEnv('BENCH_ITEMS', 500, 1),
  markerMs: intEnv('BENCH_MARKER_MS', 100, 10),
  pollMs: intEnv('BENCH_POLL_MS', 50, 1),
  catchupTimeoutSeconds: intEnv('BENCH_CATCHUP_TIMEOUT_SECONDS', 600, 1),
  quietSeconds: intEnv('BENCH_QUIET_SECONDS', 30),
  idleSeconds: intEnv('BENCH_IDLE_SECONDS', 5),
  lingerMs: process.env.KAFKA_LINGER_MS,
  sinkBatchSize: process.env.SINK_BATCH_SIZE,
  sinkFlushMs: process.env.SINK_FLUSH_MS,
  clickhouseUrl: process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:8123',
};

const BARS = {
  endToEndEventsPerSecond: 20_000,
  endToEndCpuMicros: 70,
  batchEventsPerSecond: 60_000,
  freshnessP99Ms: 2000,
  freshnessRate: 5000,
  aloneOverBare: 0.4,
  aloneP99Ms: 25,
  cpuAt2: 1.5,
  cpuAt8: 1.25,
  p99At1Ms: 5,
  embeddedP50Ms: 2,
  embeddedEventsPerSecond: 8000,
};

/** Every load event carries this quantity, markers 1: the expected sums are exact. */
const QUANTITY = '0.12345678';
const NO_EVENTS_SUM = '0.00000000';
const DAY = 86_400_000;

const runId = `bench_pipeline_${process.pid}`;
const log = logger('pipeline');

/** CPU seconds so far of every process the pipeline part measures. */
interface Cpu {
  ingest: number;
  sinks: number;
  broker: number;
  redis: number;
  postgres: number;
  clickhouse: number;
  api: number;
  load: number;
}

interface PipelineResult {
  scenario: string;
  kind: Kind;
  /** Offered events/s; 0: open loop. */
  rate: number;
  machineBusyBefore: number;
  eventsPerSecond: number;
  requestLatencyMs: { p50: number; p99: number; max: number };
  /** Requests answered with another status, or whose connection failed. */
  failedRequests: number;
  /** Paced loads: requests that came due but found no free connection before the load's end. */
  unsentRequests: number;
  /** Seconds from the end of the load until both sinks had committed everything. */
  catchUpSeconds: number | null;
  endToEndMs: { markers: number; p50: number; p99: number; max: number } | null;
  accepted: number;
  cpuMicrosPerEvent: Cpu & { totalWithoutLoad: number };
  exact: Exactness;
}

interface Exactness {
  postgresRows: number;
  postgresSum: string;
  dailyTotalsSum: string;
  clickhouseRows: number;
  clickhouseRowsBeforeMerge: number;
  clickhouseSum: string;
  expectedRows: number;
  expectedSum: string;
  deduplicated: number;
  exact: boolean;
}

interface AloneResult {
  connections: number;
  bare: { eventsPerSecond: number; p50Ms: number; p99Ms: number; cpuMicros: number };
  ingest: {
    eventsPerSecond: number;
    p50Ms: number;
    p99Ms: number;
    failed: number;
    /** Events accepted per produce call: how much each Redis and Kafka round trip was shared. */
    eventsPerProduceCall: number;
    cpuMicros: { ingest: number; redis: number; broker: number; load: number };
  };
}

interface EmbeddedResult {
  connections: number;
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
  cpuMicrosPerEvent: number;
}

interface ScenarioSetup {
  orgId: number;
  apiKey: string;
  itemIds: number[];
  marker: { subscriptionId: number; itemId: number };
}

const report: {
  pipeline: PipelineResult[];
  alone: AloneResult[];
  embedded: EmbeddedResult[];
  embeddedStored?: { sent: number; found: number };
  idle?: Record<keyof Cpu, number>;
  insertOrder: InsertOrderResult[];
  truncatedPartitions: string[];
} = { pipeline: [], alone: [], embedded: [], insertOrder: [], truncatedPartitions: [] };

try {
  await main();
} finally {
  await stopChildren('SIGKILL');
  await cleanUp();
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify(settings)}`);
  for (const part of settings.parts) {
    if (part === 'pipeline') await runPipeline();
    if (part === 'alone') await runAlone();
    if (part === 'embedded') await runEmbedded();
    if (part === 'insert') report.insertOrder = await runInsertOrder(runId, log);
  }
  printResults();
  const bars = evaluate();
  printBars(bars);
  log(`report written to ${await writeReport('pipeline', { settings, ...report, bars })}`);
}

// --- the pipeline -----------------------------------------------------------------------------

async function runPipeline(): Promise<void> {
  const databaseUrl = await createDatabase(runId);
  const scenarios = settings.kinds.flatMap((kind) =>
    settings.rates.map((rate) => ({ kind, rate, name: `${kind}@${rate === 0 ? 'open' : rate}` })),
  );
  const setups = await prepareOrganizations(databaseUrl, ['warmup', ...scenarios.map((s) => s.name)]);
  const redis = await startRedisServer();
  const broker = await startKafkaTestBrokerProcess();
  const topic = `${runId}_usage`;
  await broker.createTopic(topic, settings.partitions);
  const env = serviceEnv(databaseUrl, redis.url, broker.bootstrap, topic);
  const [apiPort, ingestPort, sinksPort] = [await freePort(), await freePort(), await freePort()];
  const api = await startService('services/api/main.ts', { ...env, PORT: String(apiPort) }, apiPort);
  const ingest = await startService(
    'services/ingest/main.ts',
    // uWebSockets.js, as deployed behind deploy/nginx; the keys sent here are printable ASCII
    { ...env, INGEST_PORT: String(ingestPort), INGEST_TRUSTED_PROXY: 'true' },
    ingestPort,
  );
  const sinks = await startService(
    'services/ingest/sinks.ts',
    { ...env, SINKS_PORT: String(sinksPort) },
    sinksPort,
  );
  const kafka = createKafka({ brokers: [broker.bootstrap], clientId: 'bench-pipeline' });
  const admin = kafka.admin();
  await admin.connect();
  const pids = { ingest: ingest.pid, sinks: sinks.pid, api: api.pid, broker: broker.pid, redis: redis.pid };
  const warmup = setups.get('warmup')!;
  try {
    report.idle = await idleCpu(pids);
    for (const scenario of scenarios) {
      const setup = setups.get(scenario.name)!;
      log(`${scenario.name}: warm-up ${settings.warmupSeconds} s`);
      if (settings.warmupSeconds > 0) {
        await runLoad(
          scenario.kind,
          scenario.rate,
          ingestPort,
          warmup,
          `w-${scenario.name}`,
          settings.warmupSeconds,
        );
      }
      await caughtUp(admin, topic, ingestPort);
      const machineBusyBefore = await waitForQuietMachine(0.1, settings.quietSeconds * 1000);
      log(
        `${scenario.name}: ${settings.durationSeconds} s on a machine ${Math.round(machineBusyBefore * 100)}% busy`,
      );
      const counted = await ingestCounters(ingestPort);
      const cpuBefore = await cpu(pids, runId);
      const markers = startMarkers(apiPort, ingestPort, setup, scenario.name);
      const load = await runLoad(
        scenario.kind,
        scenario.rate,
        ingestPort,
        setup,
        scenario.name,
        settings.durationSeconds,
      );
      const endToEnd = await markers.stop();
      const loadEnded = Date.now();
      const catchUp = await caughtUp(admin, topic, ingestPort);
      const catchUpSeconds = catchUp ? round((Date.now() - loadEnded) / 1000) : null;
      const cpuAfter = await cpu(pids, runId);
      const countedAfter = await ingestCounters(ingestPort);
      const accepted = countedAfter.accepted - counted.accepted;
      const exact = await exactness(databaseUrl, setup.orgId, {
        accepted,
        markers: endToEnd.accepted,
        deduplicated: countedAfter.deduplicated - counted.deduplicated,
      });
      const micros = perEvent(cpuBefore, cpuAfter, accepted);
      report.pipeline.push({
        scenario: scenario.name,
        kind: scenario.kind,
        rate: scenario.rate,
        machineBusyBefore: round(machineBusyBefore),
        eventsPerSecond: round(load.events / load.seconds),
        requestLatencyMs: load.latencyMs,
        failedRequests: load.failed,
        unsentRequests: load.unsent,
        catchUpSeconds,
        endToEndMs: endToEnd.lags.length
          ? { markers: endToEnd.lags.length, ...percentiles(endToEnd.lags) }
          : null,
        accepted,
        cpuMicrosPerEvent: micros,
        exact,
      });
      log(
        `${scenario.name}: ${round(load.events / load.seconds)} events/s, ${micros.totalWithoutLoad} µs/event ` +
          `without the load generator, caught up ${catchUpSeconds ?? 'never'} s after, ` +
          `${exact.exact ? 'exact' : 'NOT EXACT'} (${JSON.stringify(exact)})`,
      );
    }
    report.truncatedPartitions = await truncatedPartitions(admin, topic);
  } finally {
    await admin.disconnect();
    await stopChildren();
  }
}

function serviceEnv(databaseUrl: string, redisUrl: string, brokers: string, topic: string) {
  return {
    APP_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: `${runId}:`,
    KAFKA_BROKERS: brokers,
    KAFKA_USAGE_TOPIC: topic,
    KAFKA_TOPIC_PARTITIONS: String(settings.partitions),
    KAFKA_CONSUMER_GROUP_PREFIX: `${runId}-`,
    KAFKA_LINGER_MS: settings.lingerMs,
    SINK_BATCH_SIZE: settings.sinkBatchSize,
    SINK_FLUSH_MS: settings.sinkFlushMs,
    CLICKHOUSE_URL: settings.clickhouseUrl,
    CLICKHOUSE_DATABASE: runId,
  };
}

/**
 * Per name an organization with a limit no load meets, `settings.items` metered items on one
 * subscription (written directly, as bench:ingest does), and a marker subscription of one metered
 * item made through the domain functions, so that /usage prices it as it would any other.
 */
async function prepareOrganizations(
  databaseUrl: string,
  names: string[],
): Promise<Map<string, ScenarioSetup>> {
  const db = new Database(databaseUrl, { poolSize: 2 });
  const setups = new Map<string, ScenarioSetup>();
  const periodStart = new Date(Math.floor((Date.now() - 10 * DAY) / DAY) * DAY);
  try {
    await migrate(db);
    for (const name of names) {
      const org = await createOrganization(db, { name: `Pipeline ${name}`, plan: 'scale' });
      await setRateLimitOverride(db, org.id, 2_000_000_000);
      const { api_key: apiKey } = await createApiKey(db, { orgId: org.id, name: 'bench' });
      const customer = await createCustomer(
        db,
        org.id,
        CreateCustomer.parse({ name: 'Pipeline customer', country: 'CA', state_province: 'ON' }),
      );
      const product = await createProduct(db, org.id, {
        name: 'API calls',
        pricing_type: 'usage',
        pricing_mode: 'graduated',
        currency: 'CAD',
        unit_label: 'call',
        tiers: [{ up_to: null, unit_price: '0.001' }],
      });
      const marker = await createSubscription(
        db,
        org.id,
        { customer_id: customer.id, items: [{ product_id: product.id }], start_date: periodStart },
        { now: periodStart },
      );
      const { rows: subscriptions } = await db.query<{ id: number }>(
        `INSERT INTO subscriptions (org_id, customer_id, status, start_date, next_billing_date, billing_period,
           billing_anchor_day, current_period_start, current_period_end)
         VALUES ($1, $2, 'active', now(), now() + interval '1 month', 'monthly', 1, now(), now() + interval '1 month')
         RETURNING id`,
        [org.id, customer.id],
      );
      const { rows: items } = await db.query<{ id: number }>(
        `INSERT INTO subscription_items (org_id, subscription_id, product_id, unit_price, usage_type)
         SELECT $1, $2, $3, 0.001, 'metered' FROM generate_series(1, $4) RETURNING id`,
        [org.id, subscriptions[0]!.id, product.id, settings.items],
      );
      setups.set(name, {
        orgId: org.id,
        apiKey,
        itemIds: items.map((item) => item.id),
        marker: { subscriptionId: marker.id, itemId: marker.items[0]!.id },
      });
    }
  } finally {
    await db.close();
  }
  return setups;
}

interface LoadOutcome {
  /** Events answered 201 (singles) or inside a 200 (batches). */
  events: number;
  seconds: number;
  failed: number;
  unsent: number;
  latencyMs: { p50: number; p99: number; max: number };
}

/** Usage requests with a fresh key per event, for `setup`'s items: one event, or a batch. */
function usageRequests(
  kind: Kind,
  port: number,
  setup: ScenarioSetup,
  keyPrefix: string,
): AutocannonRequestEntry {
  const batch = kind === 'batch';
  const url = `http://127.0.0.1:${port}${BASE_PATH}/usage/events${batch ? '/batch' : ''}`;
  const headers = { authorization: `Bearer ${setup.apiKey}`, 'content-type': 'application/json' };
  const event = (item: number) => `"subscription_item_id":${item},"quantity":${QUANTITY}`;
  const templates = batch
    ? [
        {
          method: 'POST',
          headers,
          body: `{"events":[${Array.from(
            { length: settings.batchEvents },
            (_, i) => `{${event(setup.itemIds[i % setup.itemIds.length]!)},"idempotency_key":"${KEY_SLOT}"}`,
          ).join(',')}]}`,
        },
      ]
    : setup.itemIds.map((item) => ({
        method: 'POST',
        headers: { ...headers, 'idempotency-key': KEY_SLOT },
        body: `{${event(item)}}`,
      }));
  return freshKeyRequest(url, `${keyPrefix}-${Date.now().toString(36)}-`, templates);
}

/** A load of `seconds`: paced at `rate` events/s, or (rate 0) closed loop as fast as answers come. */
async function runLoad(
  kind: Kind,
  rate: number,
  port: number,
  setup: ScenarioSetup,
  keyPrefix: string,
  seconds: number,
): Promise<LoadOutcome> {
  const eventsPerRequest = kind === 'batch' ? settings.batchEvents : 1;
  const requests = usageRequests(kind, port, setup, keyPrefix);
  if (rate > 0) {
    const requestRate = rate / eventsPerRequest;
    const result = await pacedLoad({
      port,
      rate: requestRate,
      seconds,
      connections: Math.max(1, Math.min(settings.pacedConnections, Math.ceil(requestRate))),
      next: requests.nextBuffer!,
    });
    const ok = (result.statuses[kind === 'batch' ? 200 : 201] ?? 0) * eventsPerRequest;
    return {
      events: ok,
      seconds: Math.max(result.seconds, 0.001),
      failed: result.answered - ok / eventsPerRequest,
      unsent: result.unsent,
      latencyMs: { p50: result.latencyMs.p50, p99: result.latencyMs.p99, max: result.latencyMs.max },
    };
  }
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: kind === 'batch' ? settings.batchConnections : settings.connections,
    duration: seconds,
    requests: [requests],
  });
  return {
    events: result['2xx'] * eventsPerRequest,
    seconds: result.duration,
    failed: result.non2xx + result.errors + result.timeouts,
    unsent: 0,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
  };
}

/**
 * A marker event every BENCH_MARKER_MS on the scenario's marker item, each sent once the one before
 * was answered (so the log holds them in order), and /usage of its subscription polled every
 * BENCH_POLL_MS: when it counts n markers, markers 1..n are counted, and each one's lag is from
 * its 201 to that answer. `stop` ends the markers and waits (at most 30 s) for the last to count.
 */
function startMarkers(apiPort: number, ingestPort: number, setup: ScenarioSetup, scenario: string) {
  const headers = { authorization: `Bearer ${setup.apiKey}` };
  const answeredAt: number[] = [];
  const lags: number[] = [];
  let counted = 0;
  let sending = true;
  let polling = true;
  const send = (async () => {
    for (let n = 1; sending; n++) {
      const tick = Date.now();
      const response = await fetch(`http://127.0.0.1:${ingestPort}${BASE_PATH}/usage/events`, {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'idempotency-key': `marker-${scenario}-${n}`,
        },
        body: JSON.stringify({ subscription_item_id: setup.marker.itemId, quantity: 1 }),
      });
      await response.arrayBuffer();
      if (response.status === 201) answeredAt.push(Date.now());
      else log(`marker ${n}: ${response.status}`);
      await sleep(Math.max(0, settings.markerMs - (Date.now() - tick)));
    }
  })();
  const usageUrl = `http://127.0.0.1:${apiPort}${BASE_PATH}/subscriptions/${setup.marker.subscriptionId}/usage`;
  const poll = (async () => {
    while (polling) {
      const answer = await fetch(usageUrl, { headers });
      const body = (await answer.json()) as { data?: { items: { quantity: string }[] } };
      const now = Date.now();
      const quantity = Math.floor(Number(body.data?.items[0]?.quantity ?? 0));
      for (; counted < Math.min(quantity, answeredAt.length); counted++)
        lags.push(now - answeredAt[counted]!);
      await sleep(settings.pollMs);
    }
  })();
  return {
    async stop(): Promise<{ lags: number[]; accepted: number }> {
      sending = false;
      await send;
      const deadline = Date.now() + 30_000;
      while (counted < answeredAt.length && Date.now() < deadline) await sleep(settings.pollMs);
      polling = false;
      await poll;
      return { lags, accepted: answeredAt.length };
    },
  };
}

/**
 * What each process costs doing nothing: CPU ms per second over BENCH_IDLE_SECONDS with the
 * services started and no load (timers, heartbeats, consumers' empty fetches, watermark polls).
 */
async function idleCpu(
  pids: Record<'ingest' | 'sinks' | 'api' | 'broker' | 'redis', number | undefined>,
): Promise<Record<keyof Cpu, number> | undefined> {
  if (settings.idleSeconds === 0) return undefined;
  log(`idle: ${settings.idleSeconds} s with no load`);
  const before = await cpu(pids, runId);
  const started = Date.now();
  await sleep(settings.idleSeconds * 1000);
  const after = await cpu(pids, runId);
  const seconds = (Date.now() - started) / 1000;
  const perSecond = (key: keyof Cpu) => round(((after[key] - before[key]) * 1000) / seconds);
  return {
    ingest: perSecond('ingest'),
    sinks: perSecond('sinks'),
    broker: perSecond('broker'),
    redis: perSecond('redis'),
    postgres: perSecond('postgres'),
    clickhouse: perSecond('clickhouse'),
    api: perSecond('api'),
    load: perSecond('load'),
  };
}

/** Both stores' groups committed everything the ingest service accepted (false after the timeout). */
function caughtUp(admin: Admin, topic: string, ingestPort: number): Promise<boolean> {
  return consumerGroupsCaughtUp({
    admin,
    topic,
    groupIds: [`${runId}-pg-sink`, `${runId}-ch-sink`],
    ingestPort,
    timeoutMs: settings.catchupTimeoutSeconds * 1000,
    log,
  });
}

async function cpu(
  pids: Record<'ingest' | 'sinks' | 'api' | 'broker' | 'redis', number | undefined>,
  database: string,
): Promise<Cpu> {
  const self = process.cpuUsage();
  return {
    ingest: await cpuSeconds(pids.ingest),
    sinks: await cpuSeconds(pids.sinks),
    broker: await cpuSeconds(pids.broker),
    redis: await cpuSeconds(pids.redis),
    postgres: await postgresCpuSeconds(database),
    clickhouse: await commandCpuSeconds('clickhouse'),
    api: await cpuSeconds(pids.api),
    load: (self.user + self.system) / 1e6,
  };
}

function perEvent(before: Cpu, after: Cpu, events: number): Cpu & { totalWithoutLoad: number } {
  const micros = (key: keyof Cpu) => round(((after[key] - before[key]) * 1e6) / Math.max(1, events));
  const out = {
    ingest: micros('ingest'),
    sinks: micros('sinks'),
    broker: micros('broker'),
    redis: micros('redis'),
    postgres: micros('postgres'),
    clickhouse: micros('clickhouse'),
    api: micros('api'),
    load: micros('load'),
  };
  const { load: _load, ...servers } = out;
  return { ...out, totalWithoutLoad: round(Object.values(servers).reduce((sum, n) => sum + n, 0)) };
}

/**
 * Every accepted event of the scenario's organization exactly once in both stores: as many rows
 * as events accepted (each with a fresh key, so none a repeat), sums exact (load events carry
 * QUANTITY, markers 1), and Postgres' daily totals (what /usage reads) equal to its events.
 */
async function exactness(
  databaseUrl: string,
  orgId: number,
  counted: { accepted: number; markers: number; deduplicated: number },
): Promise<Exactness> {
  const db = new Database(databaseUrl, { poolSize: 1 });
  const clickhouse = openClickHouse({ url: settings.clickhouseUrl, database: runId });
  try {
    const { rows } = await db.query<{ n: number; total: string | null; daily: string | null }>(
      `SELECT (SELECT count(*) FROM usage_events WHERE org_id = $1) AS n,
              (SELECT sum(quantity)::numeric(38, 8)::text FROM usage_events WHERE org_id = $1) AS total,
              (SELECT sum(quantity)::numeric(38, 8)::text FROM usage_daily_totals WHERE org_id = $1) AS daily`,
      [orgId],
    );
    const [final] = await clickhouse.rows<{ n: string; total: string; raw: string }>(
      `SELECT count() AS n, toString(sum(quantity)) AS total,
              (SELECT count() FROM ${runId}.usage_events WHERE org_id = ${orgId}) AS raw
         FROM ${runId}.usage_events FINAL WHERE org_id = ${orgId}`,
    );
    const loadEvents = BigInt(counted.accepted - counted.markers);
    const expectedSum = formatScaled(
      loadEvents * parseScaled(QUANTITY, 8) + BigInt(counted.markers) * 10n ** 8n,
      8,
    );
    const result = {
      postgresRows: Number(rows[0]!.n),
      postgresSum: rows[0]!.total ?? NO_EVENTS_SUM,
      dailyTotalsSum: rows[0]!.daily ?? NO_EVENTS_SUM,
      clickhouseRows: Number(final?.n ?? 0),
      clickhouseRowsBeforeMerge: Number(final?.raw ?? 0),
      clickhouseSum: final?.total ?? NO_EVENTS_SUM,
      expectedRows: counted.accepted,
      expectedSum,
      deduplicated: counted.deduplicated,
    };
    return {
      ...result,
      exact:
        result.postgresRows === counted.accepted &&
        result.clickhouseRows === counted.accepted &&
        result.postgresSum === expectedSum &&
        result.dailyTotalsSum === expectedSum &&
        result.clickhouseSum === expectedSum &&
        counted.deduplicated === 0,
    };
  } finally {
    await db.close();
    await clickhouse.close();
  }
}

/** Partitions the test broker cut from the front (it keeps about 5 MB each): unread events there are gone. */
async function truncatedPartitions(admin: Admin, topic: string): Promise<string[]> {
  return (await admin.fetchTopicOffsets(topic))
    .filter((partition) => Number(partition.low) > 0)
    .map((partition) => `${topic}/${partition.partition}`);
}

// --- the ingest service alone -------------------------------------------------------------------

async function runAlone(): Promise<void> {
  const databaseUrl = await createDatabase(`${runId}_alone`);
  const setup = (await prepareOrganizations(databaseUrl, ['alone'])).get('alone')!;
  const redis = await startRedisServer();
  const broker = await startKafkaTestBrokerProcess();
  const topic = `${runId}_alone`;
  await broker.createTopic(topic, settings.partitions);
  const env = serviceEnv(databaseUrl, redis.url, broker.bootstrap, topic);
  const [barePort, ingestPort] = [await freePort(), await freePort()];
  const bare = spawnEntry('bench/ingest/bare-server.ts', {
    env: { PORT: String(barePort) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await waitForLine(bare, (line) => line.includes('"port"'));
  const ingest = await startService(
    'services/ingest/main.ts',
    { ...env, INGEST_PORT: String(ingestPort), INGEST_TRUSTED_PROXY: 'true' },
    ingestPort,
  );
  const bareUrl = `http://127.0.0.1:${barePort}${BASE_PATH}/usage/events`;
  const bareRequest = {
    method: 'POST',
    body: `{"subscription_item_id":1,"quantity":${QUANTITY}}`,
    headers: { 'content-type': 'application/json' },
  };
  try {
    for (const connections of settings.aloneConnections) {
      await waitForQuietMachine(0.1, settings.quietSeconds * 1000);
      log(`alone at ${connections} connection(s): bare, then ingest, ${settings.durationSeconds} s each`);
      const bareCpu = await cpuSeconds(bare.pid);
      const bareResult = await autocannon({
        url: bareUrl,
        connections,
        duration: settings.durationSeconds,
        ...bareRequest,
      });
      const bareMicros = ((await cpuSeconds(bare.pid)) - bareCpu) * 1e6;
      const requests = usageRequests('single', ingestPort, setup, `alone${connections}`);
      if (settings.warmupSeconds > 0) {
        await autocannon({
          url: `http://127.0.0.1:${ingestPort}`,
          connections,
          duration: settings.warmupSeconds,
          requests: [requests],
        });
      }
      const before = [
        await cpuSeconds(ingest.pid),
        await cpuSeconds(redis.pid),
        await cpuSeconds(broker.pid),
      ];
      const countedBefore = await ingestCounters(ingestPort);
      const self = process.cpuUsage();
      const result = await autocannon({
        url: `http://127.0.0.1:${ingestPort}`,
        connections,
        duration: settings.durationSeconds,
        requests: [requests],
      });
      const selfCpu = process.cpuUsage(self);
      const after = [await cpuSeconds(ingest.pid), await cpuSeconds(redis.pid), await cpuSeconds(broker.pid)];
      const countedAfter = await ingestCounters(ingestPort);
      const events = Math.max(1, result['2xx']);
      const micros = (seconds: number) => round((seconds * 1e6) / events);
      report.alone.push({
        connections,
        bare: {
          eventsPerSecond: round(bareResult['2xx'] / bareResult.duration),
          p50Ms: bareResult.latency.p50,
          p99Ms: bareResult.latency.p99,
          cpuMicros: round(bareMicros / Math.max(1, bareResult['2xx'])),
        },
        ingest: {
          eventsPerSecond: round(result['2xx'] / result.duration),
          p50Ms: result.latency.p50,
          p99Ms: result.latency.p99,
          failed: result.non2xx + result.errors + result.timeouts,
          eventsPerProduceCall: round(
            (countedAfter.accepted - countedBefore.accepted) /
              Math.max(1, countedAfter.produceCalls - countedBefore.produceCalls),
          ),
          cpuMicros: {
            ingest: micros(after[0]! - before[0]!),
            redis: micros(after[1]! - before[1]!),
            broker: micros(after[2]! - before[2]!),
            load: micros((selfCpu.user + selfCpu.system) / 1e6),
          },
        },
      });
    }
  } finally {
    await stopChildren();
    await dropDatabase(`${runId}_alone`, log);
  }
}

// --- npm start ----------------------------------------------------------------------------------

async function runEmbedded(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'bench-pipeline-embedded-'));
  const [port, ingestPort, dbPort] = [await freePort(), await freePort(), await freePort()];
  const started = Date.now();
  const child = spawnEntry('bin/start-embedded.ts', {
    env: {
      DATA_DIR: dataDir,
      PORT: String(port),
      INGEST_PORT: String(ingestPort),
      EMBEDDED_DB_PORT: String(dbPort),
      DATABASE_URL: undefined,
      REDIS_URL: undefined,
      KAFKA_BROKERS: undefined,
      CLICKHOUSE_URL: undefined,
      LOG_LEVEL: 'warn',
      BILLING_INTERVAL_SECONDS: '86400',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
    nodeArgs: benchNodeFlags('bin/start-embedded.ts'),
  });
  try {
    const keyLine = await waitForLine(child, (line) => line.includes('API key:'));
    const [, apiKey, orgId] = /API key:\s+(sk_test_\S+)\s+\(organization (\d+)/.exec(keyLine) ?? [];
    if (!apiKey || !orgId) throw new Error(`npm start printed ${keyLine}`);
    log(`npm start ready in ${round((Date.now() - started) / 1000)} s`);
    // The demo organization's plan allows a few thousand requests an hour; lift it, as the issue's
    // figures were taken with, through the database npm start serves on its loopback port.
    const db = new Database(`postgres://postgres@127.0.0.1:${dbPort}/postgres`, { poolSize: 1 });
    let itemIds: number[];
    try {
      await setRateLimitOverride(db, Number(orgId), 2_000_000_000);
      const { rows } = await db.query<{ id: number }>(
        // items that take usage now: not removed, their subscription not ended (else 422)
        `SELECT si.id FROM subscription_items si JOIN subscriptions s ON s.org_id = si.org_id AND s.id = si.subscription_id
          WHERE si.org_id = $1 AND si.usage_type = 'metered' AND si.removed_at IS NULL AND s.ended_at IS NULL
          ORDER BY si.id`,
        [Number(orgId)],
      );
      itemIds = rows.map((row) => row.id);
    } finally {
      await db.close();
    }
    if (!itemIds.length) throw new Error('the demo organization has no metered item');
    const setup: ScenarioSetup = {
      orgId: Number(orgId),
      apiKey,
      itemIds,
      marker: { subscriptionId: 0, itemId: 0 },
    };
    let sent = 0;
    const prefix = `emb${process.pid}`;
    for (const connections of settings.embeddedConnections) {
      await waitForQuietMachine(0.1, settings.quietSeconds * 1000);
      log(`embedded at ${connections} connection(s): ${settings.durationSeconds} s`);
      const requests = usageRequests('single', ingestPort, setup, `${prefix}-c${connections}`);
      if (settings.warmupSeconds > 0) {
        const warm = await autocannon({
          url: `http://127.0.0.1:${ingestPort}`,
          connections,
          duration: settings.warmupSeconds,
          requests: [requests],
        });
        sent += warm['2xx'];
      }
      const before = await cpuSeconds(child.pid);
      const result = await autocannon({
        url: `http://127.0.0.1:${ingestPort}`,
        connections,
        duration: settings.durationSeconds,
        requests: [requests],
      });
      const used = (await cpuSeconds(child.pid)) - before;
      sent += result['2xx'];
      report.embedded.push({
        connections,
        eventsPerSecond: round(result['2xx'] / result.duration),
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        failed: result.non2xx + result.errors + result.timeouts,
        cpuMicrosPerEvent: round((used * 1e6) / Math.max(1, result['2xx'])),
      });
    }
    // every 201 is in the database (the embedded log writes Postgres before it answers)
    const check = new Database(`postgres://postgres@127.0.0.1:${dbPort}/postgres`, { poolSize: 1 });
    try {
      const { rows } = await check.query<{ n: number }>(
        `SELECT count(*) AS n FROM usage_events WHERE org_id = $1 AND idempotency_key LIKE $2`,
        [Number(orgId), `${prefix}-%`],
      );
      report.embeddedStored = { sent, found: Number(rows[0]!.n) };
    } finally {
      await check.close();
    }
  } finally {
    await stopProcess(child);
    await rm(dataDir, { recursive: true, force: true });
  }
}

// --- output -----------------------------------------------------------------------------------

function printResults(): void {
  if (report.insertOrder.length) printInsertOrder(report.insertOrder);
  if (report.idle) {
    console.log('\nidle (distributed, the services started and no load; CPU ms per second)');
    const { load: _load, ...processes } = report.idle;
    printTable(Object.keys(processes), [Object.values(processes)]);
  }
  if (report.pipeline.length) {
    console.log('\npipeline (distributed, sinks running; CPU µs per event accepted, load and catch-up)');
    printTable(
      [
        'scenario',
        'events/s',
        'req p50 ms',
        'req p99 ms',
        'failed',
        'unsent',
        'e2e p50 ms',
        'e2e p99 ms',
        'catch-up s',
        'ingest',
        'sinks',
        'broker',
        'redis',
        'postgres',
        'clickhouse',
        'api',
        'total',
        'load gen',
        'exact',
      ],
      report.pipeline.map((r) => [
        r.scenario,
        r.eventsPerSecond,
        r.requestLatencyMs.p50,
        r.requestLatencyMs.p99,
        r.failedRequests,
        r.unsentRequests,
        r.endToEndMs?.p50 ?? '-',
        r.endToEndMs?.p99 ?? '-',
        r.catchUpSeconds ?? 'never',
        r.cpuMicrosPerEvent.ingest,
        r.cpuMicrosPerEvent.sinks,
        r.cpuMicrosPerEvent.broker,
        r.cpuMicrosPerEvent.redis,
        r.cpuMicrosPerEvent.postgres,
        r.cpuMicrosPerEvent.clickhouse,
        r.cpuMicrosPerEvent.api,
        r.cpuMicrosPerEvent.totalWithoutLoad,
        r.cpuMicrosPerEvent.load,
        r.exact.exact ? 'yes' : 'NO',
      ]),
    );
    // Each scenario is checked once the sinks committed all of it, so a cut of what they had read
    // already loses nothing; it matters only where a scenario came out short.
    if (report.truncatedPartitions.length && report.pipeline.some((r) => !r.exact.exact)) {
      console.log(
        `WARNING: the Kafka test broker cut ${report.truncatedPartitions.join(', ')} (it keeps about 5 MB ` +
          'per partition): events the sinks had not read yet may be gone',
      );
    }
  }
  if (report.alone.length) {
    console.log('\ningest alone (no sinks) against the bare uWS route, closed loop');
    printTable(
      [
        'connections',
        'bare events/s',
        'bare p99',
        'ingest events/s',
        'ingest/bare',
        'p50 ms',
        'p99 ms',
        'failed',
        'events/produce',
        'CPU µs/event: ingest',
        'redis',
        'broker',
        'load gen',
      ],
      report.alone.map((r) => [
        r.connections,
        r.bare.eventsPerSecond,
        r.bare.p99Ms,
        r.ingest.eventsPerSecond,
        r.bare.eventsPerSecond ? round(r.ingest.eventsPerSecond / r.bare.eventsPerSecond) : '-',
        r.ingest.p50Ms,
        r.ingest.p99Ms,
        r.ingest.failed,
        r.ingest.eventsPerProduceCall,
        r.ingest.cpuMicros.ingest,
        r.ingest.cpuMicros.redis,
        r.ingest.cpuMicros.broker,
        r.ingest.cpuMicros.load,
      ]),
    );
  }
  if (report.embedded.length) {
    console.log('\nembedded (npm start), single events on its ingest port');
    printTable(
      ['connections', 'events/s', 'p50 ms', 'p99 ms', 'failed', 'CPU µs/event'],
      report.embedded.map((r) => [
        r.connections,
        r.eventsPerSecond,
        r.p50Ms,
        r.p99Ms,
        r.failed,
        r.cpuMicrosPerEvent,
      ]),
    );
    if (report.embeddedStored) {
      console.log(
        `201s sent ${report.embeddedStored.sent}, found in the database ${report.embeddedStored.found}`,
      );
    }
  }
}

interface Bar {
  bar: string;
  measured: string;
  pass: boolean | undefined;
}

function evaluate(): Bar[] {
  const bars: Bar[] = [];
  const pipeline = (kind: Kind, rate: number) =>
    report.pipeline.find((r) => r.kind === kind && r.rate === rate);
  const openSingle = pipeline('single', 0);
  if (openSingle) {
    bars.push({
      bar: `end to end, single events: >= ${BARS.endToEndEventsPerSecond} events/s counted exactly`,
      measured: `${openSingle.eventsPerSecond} events/s, ${openSingle.exact.exact ? 'exact' : 'not exact'}`,
      pass: openSingle.eventsPerSecond >= BARS.endToEndEventsPerSecond && openSingle.exact.exact,
    });
    bars.push({
      bar: `end to end, single events: <= ${BARS.endToEndCpuMicros} µs CPU/event (all but the load generator)`,
      measured: `${openSingle.cpuMicrosPerEvent.totalWithoutLoad} µs`,
      pass: openSingle.cpuMicrosPerEvent.totalWithoutLoad <= BARS.endToEndCpuMicros,
    });
  }
  const openBatch = pipeline('batch', 0);
  if (openBatch) {
    bars.push({
      bar: `end to end, batches: >= ${BARS.batchEventsPerSecond} events/s counted exactly`,
      measured: `${openBatch.eventsPerSecond} events/s, ${openBatch.exact.exact ? 'exact' : 'not exact'}`,
      pass: openBatch.eventsPerSecond >= BARS.batchEventsPerSecond && openBatch.exact.exact,
    });
  }
  const fresh = pipeline('single', BARS.freshnessRate);
  if (fresh?.endToEndMs) {
    bars.push({
      bar: `201 to counted in /usage p99 <= ${BARS.freshnessP99Ms} ms at ${BARS.freshnessRate} events/s`,
      measured: `${fresh.endToEndMs.p99} ms over ${fresh.endToEndMs.markers} markers`,
      pass: fresh.endToEndMs.p99 <= BARS.freshnessP99Ms,
    });
  }
  const inexact = report.pipeline.filter((r) => !r.exact.exact);
  if (report.pipeline.length) {
    bars.push({
      bar: 'every scenario: each accepted event exactly once in Postgres and ClickHouse',
      measured: inexact.length ? `not in ${inexact.map((r) => r.scenario).join(', ')}` : 'all exact',
      pass: inexact.length === 0,
    });
  }
  if (report.alone.length) {
    const widest = report.alone.reduce((a, b) => (b.connections > a.connections ? b : a));
    const at = (n: number) => report.alone.find((r) => r.connections === n);
    const ratio = widest.bare.eventsPerSecond
      ? widest.ingest.eventsPerSecond / widest.bare.eventsPerSecond
      : 0;
    bars.push({
      bar: `ingest alone >= ${BARS.aloneOverBare} of bare uWS (${widest.connections} connections)`,
      measured: `${round(ratio)} (${widest.ingest.eventsPerSecond} / ${widest.bare.eventsPerSecond})`,
      pass: ratio >= BARS.aloneOverBare,
    });
    bars.push({
      bar: `ingest alone p99 <= ${BARS.aloneP99Ms} ms (${widest.connections} connections)`,
      measured: `${widest.ingest.p99Ms} ms`,
      pass: widest.ingest.p99Ms <= BARS.aloneP99Ms,
    });
    const saturated = widest.ingest.cpuMicros.ingest;
    for (const [connections, bound] of [
      [2, BARS.cpuAt2],
      [8, BARS.cpuAt8],
    ] as const) {
      const row = at(connections);
      if (!row) continue;
      const factor = saturated ? row.ingest.cpuMicros.ingest / saturated : 0;
      bars.push({
        bar: `ingest CPU/event at ${connections} connections <= ${bound}x saturated`,
        measured: `${round(factor)}x (${row.ingest.cpuMicros.ingest} / ${saturated} µs)`,
        pass: factor <= bound,
      });
    }
    const one = at(1);
    if (one) {
      bars.push({
        bar: `ingest p99 at 1 connection <= ${BARS.p99At1Ms} ms`,
        measured: `${one.ingest.p99Ms} ms`,
        pass: one.ingest.p99Ms <= BARS.p99At1Ms,
      });
    }
  }
  for (const row of report.embedded) {
    if (row.connections <= 4) {
      bars.push({
        bar: `embedded p50 <= ${BARS.embeddedP50Ms} ms at ${row.connections} connection(s)`,
        measured: `${row.p50Ms} ms (${row.eventsPerSecond} events/s)`,
        pass: row.p50Ms <= BARS.embeddedP50Ms,
      });
    } else if (row.connections === 50) {
      bars.push({
        bar: `embedded >= ${BARS.embeddedEventsPerSecond} events/s at 50 connections`,
        measured: `${row.eventsPerSecond} events/s (p50 ${row.p50Ms} ms)`,
        pass: row.eventsPerSecond >= BARS.embeddedEventsPerSecond,
      });
    }
  }
  if (report.embeddedStored) {
    const { sent, found } = report.embeddedStored;
    bars.push({
      // Requests in flight when a load ended are answered and stored, but not counted as 201s.
      bar: 'embedded: every 201 in the database',
      measured: `${found} stored, ${sent} answered 201`,
      pass: found >= sent,
    });
  }
  return bars;
}

// --- processes --------------------------------------------------------------------------------

/** A service as ONE node process, ready once /healthz answers; its log lines go beside the report. */
function startService(
  entry: string,
  env: Record<string, string | undefined>,
  port: number,
): Promise<ChildProcess> {
  return startLoggedProcess(entry, { env, port, logName: runId });
}

async function cleanUp(): Promise<void> {
  await dropDatabase(runId, log);
  await dropClickHouseDatabase(settings.clickhouseUrl, runId, log);
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
