/**
 * `npm run bench:alerts`: spend alerts on the distributed pipeline (issue 35). The ingest service
 * (uWS), the sinks (pg-sink, ch-sink and the `alerts` group that evaluates alerts), the api,
 * the webhook dispatcher, a Kafka test broker and a redis-server of this run, Postgres and
 * ClickHouse; a webhook receiver in this process. BENCH_ALERTS subscriptions (default 1,000), one
 * metered item each, each with a `usage_quantity` alert armed at CROSSING.
 *
 * The evaluator is one group, `alerts`: the usage_quantity alerts, near their threshold only, and
 * beside them the other policies (top-ups, drafts, amount and credit alerts, after the pg-sink's
 * watermark) on the items they watch (none here).
 *
 * Parts (BENCH_PARTS, comma list, default both, in this order):
 *
 *   throughput  ingest closed loop (BENCH_CONNECTIONS connections, BENCH_THROUGHPUT_SECONDS) on the
 *               alerted items, with the sinks process running only the stores' groups
 *               (SINKS_GUARDRAILS=false) and with the evaluator too, BENCH_ROUNDS times each,
 *               alternating, the evaluator second in odd rounds and first in even ones. Each run
 *               on a topic of its own, with a fresh ingest process and consumer groups
 *               (BENCH_FRESH_TOPIC=0: all on one topic): the test broker scans a partition's log
 *               for each group's fetch, so its CPU per event grows with the topic, and on one topic
 *               each run would pay for the runs before it. Every run starts once every group
 *               caught up and the machine is quiet.
 *               Load events carry 0.001, so no alert crosses: the evaluator reads the usage of
 *               every touched subscription with an alert and writes nothing.
 *   latency     BENCH_RATE events/s paced evenly for BENCH_DURATION_SECONDS on those items, and,
 *               spread evenly over the same time, one crossing event per alert (quantity CROSSING),
 *               each on its own. From each crossing's 201 to the receiver's first `alert.triggered`
 *               for that alert: p50/p99/max; and every alert fired exactly once (distinct
 *               webhook-id per alert).
 *
 * Bars: latency p99 <= 2 s at 5,000 events/s with 1,000 alerts; ingest events/s with the evaluator
 * >= 0.9 of without (the median of the rounds' own ratios; the ratio of the means beside it).
 *
 * Settings (env, defaults in brackets): BENCH_ALERTS [1000], BENCH_RATE [5000],
 * BENCH_DURATION_SECONDS [60], BENCH_THROUGHPUT_SECONDS [20], BENCH_ROUNDS [2], BENCH_FRESH_TOPIC
 * [1], BENCH_CONNECTIONS [50], BENCH_PACED_CONNECTIONS [64], BENCH_PARTITIONS [12], BENCH_TIMEOUT_SECONDS [120: the
 * longest wait for the last delivery and for the groups to catch up], BENCH_QUIET_SECONDS [30],
 * DATABASE_URL (admin URL; a database bench_alerts_<pid> is created and dropped), CLICKHOUSE_URL
 * (a database of the same name is created and dropped). Report: bench/results/alerts-<time>.json.
 * On this 2-core VM every process shares the cores with the load generator and the receiver.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiKey } from '../../libs/auth/index.js';
import { createProduct } from '../../libs/catalog/index.js';
import { createCustomer } from '../../libs/customers/index.js';
import { Database, migrate } from '../../libs/db/index.js';
import { createKafka } from '../../libs/kafka/index.js';
import { createOrganization, setRateLimitOverride } from '../../libs/organizations/index.js';
import { BASE_PATH, CreateCustomer } from '../../libs/schemas/index.js';
import { createSubscription } from '../../libs/subscriptions/index.js';
import { createEndpoint } from '../../libs/webhooks/index.js';
import { pacedLoad } from '../pipeline/paced-load.js';
import {
  autocannon,
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
  pairedShare,
  percentiles,
  printBars,
  printTable,
  startKafkaTestBrokerProcess,
  startLoggedProcess,
  startRedisServer,
  stopChildren,
  stopProcess,
  waitForQuietMachine,
  writeReport,
} from '../support.js';

const PARTS = ['throughput', 'latency'] as const;
const parts = (process.env.BENCH_PARTS || PARTS.join(','))
  .split(',')
  .map((part) => part.trim())
  .filter((part): part is (typeof PARTS)[number] => (PARTS as readonly string[]).includes(part));

const settings = {
  parts,
  alerts: intEnv('BENCH_ALERTS', 1000, 1),
  rate: intEnv('BENCH_RATE', 5000, 1),
  durationSeconds: intEnv('BENCH_DURATION_SECONDS', 60, 1),
  throughputSeconds: intEnv('BENCH_THROUGHPUT_SECONDS', 20, 1),
  rounds: intEnv('BENCH_ROUNDS', 2, 1),
  freshTopic: intEnv('BENCH_FRESH_TOPIC', 1) === 1,
  connections: intEnv('BENCH_CONNECTIONS', 50, 1),
  pacedConnections: intEnv('BENCH_PACED_CONNECTIONS', 64, 1),
  partitions: intEnv('BENCH_PARTITIONS', 12, 1),
  timeoutSeconds: intEnv('BENCH_TIMEOUT_SECONDS', 120, 1),
  quietSeconds: intEnv('BENCH_QUIET_SECONDS', 30),
  clickhouseUrl: process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:8123',
};
const BARS = { latencyP99Ms: 2000, latencyRate: 5000, latencyAlerts: 1000, throughputRatio: 0.9 };

/** Every alert's threshold and the quantity of its crossing event; load events carry LOAD_QUANTITY. */
const CROSSING = '1000';
const LOAD_QUANTITY = '0.001';
const DAY = 86_400_000;

const runId = `bench_alerts_${process.pid}`;
const log = logger('alerts');

interface Setup {
  orgId: number;
  apiKey: string;
  /** Per alert: its id and its metered item. */
  alerts: { id: string; itemId: number }[];
}

interface ThroughputRun {
  round: number;
  evaluator: boolean;
  eventsPerSecond: number;
  p99Ms: number;
  failed: number;
  /** CPU µs per accepted event of the sinks process (the evaluator runs in it) and of ingest. */
  sinksCpuMicros: number;
  ingestCpuMicros: number;
  /**
   * CPU µs per accepted event, from the load's start until every group caught up: the Postgres
   * backends of this run's database, this run's redis-server and Kafka test broker.
   */
  postgresCpuMicros: number;
  redisCpuMicros: number;
  brokerCpuMicros: number;
  /** The 1-minute load average when the load ended. */
  loadAverage: number;
}

interface LatencyResult {
  rate: number;
  seconds: number;
  loadEventsPerSecond: number;
  loadFailed: number;
  loadUnsent: number;
  crossingsAccepted: number;
  fired: number;
  /** Alerts with more than one distinct alert.triggered event. */
  firedTwice: number;
  /** Alerts whose event arrived before their crossing was answered (a crossing counted too early). */
  firedEarly: number;
  latencyMs: { p50: number; p99: number; max: number } | null;
  /** CPU µs per accepted event (load and crossings) over the run, per process. */
  cpuMicros: { ingest: number; sinks: number; dispatcher: number };
  /**
   * Per consumer group, over the load (sampled every 500 ms from the sinks' /metrics): the age of
   * its oldest event read and not written (seconds) and the messages it has not committed, p50
   * and max.
   */
  sinkLag: Record<string, { p50: number; max: number }>;
}

const report: { throughput: ThroughputRun[]; latency?: LatencyResult } = { throughput: [] };

try {
  await main();
} finally {
  await stopChildren('SIGKILL');
  await cleanUp();
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify(settings)}`);
  const databaseUrl = await createDatabase(runId);
  const receiver = await startReceiver();
  const redis = await startRedisServer();
  const broker = await startKafkaTestBrokerProcess();
  let topic = `${runId}_usage`;
  await broker.createTopic(topic, settings.partitions);
  const env = serviceEnv(databaseUrl, redis.url, broker.bootstrap, topic);
  // the ingest and the sinks' env: its topic and consumer groups change with each throughput run
  let logEnv = { ...env };
  const [apiPort, dispatcherPort] = [await freePort(), await freePort()];
  let ingestPort = await freePort();
  const setupDone = prepare(databaseUrl, receiver.port);
  await startLoggedProcess('services/api/main.ts', {
    env: { ...env, PORT: String(apiPort) },
    port: apiPort,
    logName: runId,
  });
  const startIngest = () =>
    startLoggedProcess('services/ingest/main.ts', {
      // uWebSockets.js, as deployed behind deploy/nginx; the keys sent here are printable ASCII
      env: { ...logEnv, INGEST_PORT: String(ingestPort), INGEST_TRUSTED_PROXY: 'true' },
      port: ingestPort,
      logName: runId,
    });
  let ingest = await startIngest();
  const dispatcher = await startLoggedProcess('services/dispatcher/main.ts', {
    env: { ...env, DISPATCHER_PORT: String(dispatcherPort) },
    port: dispatcherPort,
    logName: runId,
  });
  const { orgId, apiKey } = await setupDone;
  const setup: Setup = { orgId, apiKey, alerts: await armAlerts(apiPort, apiKey, orgId, databaseUrl) };
  const monitor = new Database(databaseUrl, { poolSize: 1 });
  const cpuOthers = async () => ({
    postgres: await postgresCpu(monitor),
    redis: await cpuSeconds(redis.pid),
    broker: await cpuSeconds(broker.pid),
  });
  log(`${setup.alerts.length} alerts armed`);
  const kafka = createKafka({ brokers: [broker.bootstrap], clientId: 'bench-alerts' });
  const admin = kafka.admin();
  await admin.connect();
  const caughtUp = async (evaluator: boolean) => {
    const groups = ['pg-sink', 'ch-sink', ...(evaluator ? ['alerts'] : [])];
    const caught = await consumerGroupsCaughtUp({
      admin,
      topic,
      groupIds: groups.map((group) => `${logEnv.KAFKA_CONSUMER_GROUP_PREFIX}${group}`),
      ingestPort,
      timeoutMs: settings.timeoutSeconds * 1000,
      log,
    });
    if (!caught) throw new Error(`the sinks (${groups.join(', ')}) did not catch up`);
  };
  let sinks: ChildProcess | undefined;
  let sinksPort = 0;
  const startSinks = async (evaluator: boolean) => {
    if (sinks) await stopProcess(sinks);
    const port = await freePort();
    sinksPort = port;
    sinks = await startLoggedProcess('services/ingest/sinks.ts', {
      env: { ...logEnv, SINKS_PORT: String(port), SINKS_GUARDRAILS: String(evaluator) },
      port,
      logName: runId,
    });
    await caughtUp(evaluator);
    return sinks;
  };
  try {
    if (settings.parts.includes('throughput')) {
      for (let round = 1; round <= settings.rounds; round++) {
        for (const evaluator of round % 2 === 1 ? [false, true] : [true, false]) {
          if (settings.freshTopic) {
            // The test broker serves each group's fetch by scanning the partition's log: on one
            // topic every run would pay for the runs before it, whichever variant it is.
            topic = `${runId}_usage_${round}_${evaluator ? 'on' : 'off'}`;
            await broker.createTopic(topic, settings.partitions);
            logEnv = { ...env, KAFKA_USAGE_TOPIC: topic, KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-` };
            if (sinks) await stopProcess(sinks);
            sinks = undefined;
            await stopProcess(ingest);
            ingestPort = await freePort();
            ingest = await startIngest();
          }
          const running = await startSinks(evaluator);
          report.throughput.push(
            await throughput({
              round,
              evaluator,
              ingestPort,
              ingest,
              sinks: running,
              setup,
              caughtUp,
              cpuOthers,
            }),
          );
        }
      }
    }
    if (settings.parts.includes('latency')) {
      const running = await startSinks(true);
      report.latency = await latency(ingestPort, setup, receiver, {
        ingest,
        sinks: running,
        dispatcher,
        sinksPort,
      });
    }
  } finally {
    // stopped, not killed: with BENCH_PROFILE_DIR it writes its profile (the evaluator's, last)
    if (sinks) await stopProcess(sinks);
    await monitor.close();
    await admin.disconnect();
    receiver.server.close();
  }
  printResults();
  const bars = evaluate();
  printBars(bars);
  log(`report written to ${await writeReport('alerts', { settings, ...report, bars })}`);
}

// --- the runs -----------------------------------------------------------------------------------

async function throughput(run: {
  round: number;
  evaluator: boolean;
  ingestPort: number;
  ingest: ChildProcess;
  sinks: ChildProcess;
  setup: Setup;
  caughtUp: (evaluator: boolean) => Promise<void>;
  cpuOthers: () => Promise<{ postgres: Map<number, number>; redis: number; broker: number }>;
}): Promise<ThroughputRun> {
  const { round, evaluator, ingestPort, ingest, sinks, setup } = run;
  const busy = await waitForQuietMachine(0.1, settings.quietSeconds * 1000);
  const name = `round ${round}, evaluator ${evaluator ? 'on' : 'off'}`;
  log(`${name}: ${settings.throughputSeconds} s closed loop on a machine ${Math.round(busy * 100)}% busy`);
  const before = { sinks: await cpuSeconds(sinks.pid), ingest: await cpuSeconds(ingest.pid) };
  const othersBefore = await run.cpuOthers();
  const counted = await ingestCounters(ingestPort);
  const result = await autocannon({
    url: `http://127.0.0.1:${ingestPort}`,
    connections: settings.connections,
    duration: settings.throughputSeconds,
    requests: [loadRequests(ingestPort, setup, `t${round}${evaluator ? 'e' : 'n'}`)],
  });
  const accepted = (await ingestCounters(ingestPort)).accepted - counted.accepted;
  const micros = (seconds: number) => round2((seconds * 1e6) / Math.max(1, accepted));
  const outcome: ThroughputRun = {
    round,
    evaluator,
    eventsPerSecond: round2(result['2xx'] / result.duration),
    p99Ms: result.latency.p99,
    failed: result.non2xx + result.errors + result.timeouts,
    sinksCpuMicros: 0,
    ingestCpuMicros: micros((await cpuSeconds(ingest.pid)) - before.ingest),
    postgresCpuMicros: 0,
    redisCpuMicros: 0,
    brokerCpuMicros: 0,
    loadAverage: round2(loadavg()[0]!),
  };
  // the sinks' CPU counts what they spent on this load: all of it read and evaluated
  await run.caughtUp(evaluator);
  outcome.sinksCpuMicros = micros((await cpuSeconds(sinks.pid)) - before.sinks);
  const othersAfter = await run.cpuOthers();
  let postgres = 0;
  // a backend that ended meanwhile is lost; one that started counts from its start
  for (const [pid, seconds] of othersAfter.postgres)
    postgres += seconds - (othersBefore.postgres.get(pid) ?? 0);
  outcome.postgresCpuMicros = micros(postgres);
  outcome.redisCpuMicros = micros(othersAfter.redis - othersBefore.redis);
  outcome.brokerCpuMicros = micros(othersAfter.broker - othersBefore.broker);
  log(
    `${name}: ${outcome.eventsPerSecond} events/s, µs/event: sinks ${outcome.sinksCpuMicros}, ` +
      `postgres ${outcome.postgresCpuMicros}, redis ${outcome.redisCpuMicros}, broker ${outcome.brokerCpuMicros}; ` +
      `load average ${outcome.loadAverage}`,
  );
  return outcome;
}

async function latency(
  ingestPort: number,
  setup: Setup,
  receiver: Receiver,
  processes: { ingest: ChildProcess; sinks: ChildProcess; dispatcher: ChildProcess; sinksPort: number },
): Promise<LatencyResult> {
  const busy = await waitForQuietMachine(0.1, settings.quietSeconds * 1000);
  log(
    `latency: ${settings.rate} events/s for ${settings.durationSeconds} s and ${setup.alerts.length} ` +
      `crossings, on a machine ${Math.round(busy * 100)}% busy`,
  );
  receiver.reset();
  const cpuOf = async () => ({
    ingest: await cpuSeconds(processes.ingest.pid),
    sinks: await cpuSeconds(processes.sinks.pid),
    dispatcher: await cpuSeconds(processes.dispatcher.pid),
  });
  const cpuBefore = await cpuOf();
  const lagSampler = sampleSinkLag(processes.sinksPort);
  const requests = loadRequests(ingestPort, setup, 'lat');
  const loadDone = pacedLoad({
    port: ingestPort,
    rate: settings.rate,
    seconds: settings.durationSeconds,
    connections: Math.max(1, Math.min(settings.pacedConnections, settings.rate)),
    next: requests.nextBuffer!,
  });
  const answeredAt = new Map<string, number>();
  const started = Date.now();
  const spacing = (settings.durationSeconds * 1000) / setup.alerts.length;
  const crossings = setup.alerts.map(async (alert, index) => {
    await sleep(Math.max(0, started + (index + 0.5) * spacing - Date.now()));
    const response = await fetch(`http://127.0.0.1:${ingestPort}${BASE_PATH}/usage/events`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${setup.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': `crossing-${alert.id}`,
      },
      body: `{"subscription_item_id":${alert.itemId},"quantity":${CROSSING}}`,
    });
    await response.arrayBuffer();
    if (response.status === 201) answeredAt.set(alert.id, Date.now());
    else log(`crossing of ${alert.id}: ${response.status}`);
  });
  const [load] = await Promise.all([loadDone, Promise.all(crossings)]);
  const sinkLag = lagSampler.stop();
  const deadline = Date.now() + settings.timeoutSeconds * 1000;
  while (receiver.firstArrival.size < answeredAt.size && Date.now() < deadline) await sleep(100);
  // a second delivery of one crossing would come within moments of the first
  await sleep(2000);
  const lags: number[] = [];
  let firedEarly = 0;
  for (const [alertId, answered] of answeredAt) {
    const arrived = receiver.firstArrival.get(alertId);
    if (arrived === undefined) continue;
    if (arrived < answered) firedEarly++;
    lags.push(arrived - answered);
  }
  const ok = load.statuses[201] ?? 0;
  const cpuAfter = await cpuOf();
  const perEvent = (key: keyof typeof cpuAfter) =>
    round2(((cpuAfter[key] - cpuBefore[key]) * 1e6) / Math.max(1, ok + answeredAt.size));
  return {
    rate: settings.rate,
    seconds: settings.durationSeconds,
    loadEventsPerSecond: round2(ok / Math.max(0.001, load.seconds)),
    loadFailed: load.answered - ok,
    loadUnsent: load.unsent,
    crossingsAccepted: answeredAt.size,
    fired: receiver.firstArrival.size,
    firedTwice: [...receiver.eventIds.values()].filter((ids) => ids.size > 1).length,
    firedEarly,
    latencyMs: lags.length ? percentiles(lags) : null,
    cpuMicros: { ingest: perEvent('ingest'), sinks: perEvent('sinks'), dispatcher: perEvent('dispatcher') },
    sinkLag,
  };
}

/** Samples billing_sink_lag_seconds and _messages per sink every 500 ms until stopped. */
function sampleSinkLag(port: number): { stop(): Record<string, { p50: number; max: number }> } {
  const samples = new Map<string, number[]>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const lags = /^billing_sink_lag_(seconds|messages)\{sink="([^"]+)"\} ([0-9.e+-]+)$/gm;
        for (const match of text.matchAll(lags)) {
          const key = `${match[2]} (${match[1]})`;
          const list = samples.get(key) ?? [];
          list.push(Number(match[3]));
          samples.set(key, list);
        }
      } catch {
        // a sample missed under load is only a sample
      }
      await sleep(500);
    }
  })();
  return {
    stop() {
      stopped = true;
      void loop;
      const out: Record<string, { p50: number; max: number }> = {};
      for (const [sink, values] of samples) {
        const sorted = [...values].sort((a, b) => a - b);
        out[sink] = {
          p50: round2(sorted[Math.floor(sorted.length / 2)] ?? 0),
          max: round2(sorted[sorted.length - 1] ?? 0),
        };
      }
      return out;
    },
  };
}

// --- set-up -------------------------------------------------------------------------------------

/**
 * The organization (no rate limit a load meets), its webhook endpoint to the receiver for
 * `alert.triggered`, and BENCH_ALERTS subscriptions of one metered item each (ten per customer),
 * made through the domain functions so the read-back prices them as any other.
 */
async function prepare(
  databaseUrl: string,
  receiverPort: number,
): Promise<{ orgId: number; apiKey: string }> {
  const db = new Database(databaseUrl, { poolSize: 2 });
  const periodStart = new Date(Math.floor((Date.now() - 10 * DAY) / DAY) * DAY);
  try {
    await migrate(db);
    const org = await createOrganization(db, { name: 'Alerts bench', plan: 'scale' });
    await setRateLimitOverride(db, org.id, 2_000_000_000);
    const { api_key: apiKey } = await createApiKey(db, { orgId: org.id, name: 'bench' });
    await createEndpoint(
      db,
      org.id,
      {
        url: `http://127.0.0.1:${receiverPort}/hooks`,
        events: ['alert.triggered'],
        description: 'bench',
        status: 'ACTIVE',
      },
      { allowLocalhost: true },
    );
    const product = await createProduct(db, org.id, {
      name: 'API calls',
      pricing_type: 'usage',
      pricing_mode: 'graduated',
      currency: 'CAD',
      unit_label: 'call',
      tiers: [{ up_to: null, unit_price: '0.001' }],
    });
    let customerId = 0;
    for (let n = 0; n < settings.alerts; n++) {
      if (n % 10 === 0) {
        customerId = (
          await createCustomer(
            db,
            org.id,
            CreateCustomer.parse({ name: `Customer ${n / 10}`, country: 'CA', state_province: 'ON' }),
          )
        ).id;
      }
      await createSubscription(
        db,
        org.id,
        { customer_id: customerId, items: [{ product_id: product.id }], start_date: periodStart },
        { now: periodStart },
      );
    }
    return { orgId: org.id, apiKey };
  } finally {
    await db.close();
  }
}

/** One usage_quantity alert per metered item, made through POST /alerts. */
async function armAlerts(
  apiPort: number,
  apiKey: string,
  orgId: number,
  databaseUrl: string,
): Promise<Setup['alerts']> {
  const db = new Database(databaseUrl, { poolSize: 1 });
  let items: { id: number; subscription_id: number }[];
  try {
    ({ rows: items } = await db.query<{ id: number; subscription_id: number }>(
      `SELECT id, subscription_id FROM subscription_items WHERE org_id = $1 ORDER BY id`,
      [orgId],
    ));
  } finally {
    await db.close();
  }
  const alerts: Setup['alerts'] = [];
  for (const item of items) {
    const response = await fetch(`http://127.0.0.1:${apiPort}${BASE_PATH}/alerts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        subscription_id: item.subscription_id,
        subscription_item_id: item.id,
        metric: 'usage_quantity',
        threshold: CROSSING,
      }),
    });
    const body = (await response.json()) as { data?: { id: string } };
    if (response.status !== 201 || !body.data) {
      throw new Error(`POST /alerts answered ${response.status}: ${JSON.stringify(body)}`);
    }
    alerts.push({ id: body.data.id, itemId: item.id });
  }
  return alerts;
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
    CLICKHOUSE_URL: settings.clickhouseUrl,
    CLICKHOUSE_DATABASE: runId,
    WEBHOOK_ALLOW_LOCALHOST: 'true',
  };
}

/** Load events (LOAD_QUANTITY, a fresh key each) cycling over the alerted items. */
function loadRequests(port: number, setup: Setup, keyPrefix: string) {
  const headers = {
    authorization: `Bearer ${setup.apiKey}`,
    'content-type': 'application/json',
    'idempotency-key': KEY_SLOT,
  };
  return freshKeyRequest(
    `http://127.0.0.1:${port}${BASE_PATH}/usage/events`,
    `${keyPrefix}-${Date.now().toString(36)}-`,
    setup.alerts.map((alert) => ({
      method: 'POST',
      headers,
      body: `{"subscription_item_id":${alert.itemId},"quantity":${LOAD_QUANTITY}}`,
    })),
  );
}

// --- the receiver -------------------------------------------------------------------------------

interface Receiver {
  server: Server;
  port: number;
  /** Per alert id: when its first alert.triggered arrived (Date.now()). */
  firstArrival: Map<string, number>;
  /** Per alert id: the distinct webhook-id headers of its alert.triggered deliveries. */
  eventIds: Map<string, Set<string>>;
  reset(): void;
}

/** Answers 200 at once and notes each alert.triggered delivery by its alert and webhook-id. */
async function startReceiver(): Promise<Receiver> {
  const firstArrival = new Map<string, number>();
  const eventIds = new Map<string, Set<string>>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const arrived = Date.now();
      response.writeHead(200).end();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        type: string;
        data: { id: string };
      };
      if (body.type !== 'alert.triggered') return;
      if (!firstArrival.has(body.data.id)) firstArrival.set(body.data.id, arrived);
      const ids = eventIds.get(body.data.id) ?? new Set<string>();
      ids.add(String(request.headers['webhook-id']));
      eventIds.set(body.data.id, ids);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    firstArrival,
    eventIds,
    reset() {
      firstArrival.clear();
      eventIds.clear();
    },
  };
}

// --- output -------------------------------------------------------------------------------------

/**
 * CPU seconds of each Postgres backend connected to this run's database (the services' pools,
 * which keep their connections), by pid: /proc of the same machine.
 */
async function postgresCpu(db: Database): Promise<Map<number, number>> {
  const { rows } = await db.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  const cpu = new Map<number, number>();
  for (const { pid } of rows) cpu.set(Number(pid), await cpuSeconds(Number(pid)));
  return cpu;
}

function printResults(): void {
  if (report.throughput.length) {
    console.log('\ningest closed loop on the alerted items, sinks with and without the evaluator');
    printTable(
      [
        'round',
        'evaluator',
        'events/s',
        'p99 ms',
        'failed',
        'ingest µs/event',
        'sinks µs/event',
        'postgres µs/event',
        'redis µs/event',
        'broker µs/event',
        'load avg',
      ],
      report.throughput.map((r) => [
        r.round,
        r.evaluator ? 'on' : 'off',
        r.eventsPerSecond,
        r.p99Ms,
        r.failed,
        r.ingestCpuMicros,
        r.sinksCpuMicros,
        r.postgresCpuMicros,
        r.redisCpuMicros,
        r.brokerCpuMicros,
        r.loadAverage,
      ]),
    );
  }
  const l = report.latency;
  if (l) {
    console.log(`\nalert latency: ${l.rate} events/s for ${l.seconds} s, one crossing per alert`);
    printTable(
      [
        'load events/s',
        'load failed',
        'unsent',
        'crossings 201',
        'fired',
        'fired twice',
        'fired early',
        'p50 ms',
        'p99 ms',
        'max ms',
        'ingest µs/event',
        'sinks µs/event',
        'dispatcher µs/event',
      ],
      [
        [
          l.loadEventsPerSecond,
          l.loadFailed,
          l.loadUnsent,
          l.crossingsAccepted,
          l.fired,
          l.firedTwice,
          l.firedEarly,
          l.latencyMs?.p50 ?? '-',
          l.latencyMs?.p99 ?? '-',
          l.latencyMs?.max ?? '-',
          l.cpuMicros.ingest,
          l.cpuMicros.sinks,
          l.cpuMicros.dispatcher,
        ],
      ],
    );
    console.log(
      '\nconsumer groups over the load: oldest event read and not written (s), uncommitted messages',
    );
    printTable(
      ['group (lag)', 'p50', 'max'],
      Object.entries(l.sinkLag).map(([sink, lag]) => [sink, lag.p50, lag.max]),
    );
  }
}

function evaluate(): { bar: string; measured: string; pass: boolean | undefined }[] {
  const bars: { bar: string; measured: string; pass: boolean | undefined }[] = [];
  const l = report.latency;
  if (l) {
    const atBar = l.rate >= BARS.latencyRate && settings.alerts >= BARS.latencyAlerts;
    bars.push({
      bar: `201 of the crossing to alert.triggered received, p99 <= ${BARS.latencyP99Ms} ms (${BARS.latencyRate} events/s, ${BARS.latencyAlerts} alerts)`,
      measured: l.latencyMs ? `${l.latencyMs.p99} ms (at ${l.loadEventsPerSecond} events/s)` : 'none fired',
      pass: atBar ? (l.latencyMs?.p99 ?? Number.POSITIVE_INFINITY) <= BARS.latencyP99Ms : undefined,
    });
    bars.push({
      bar: 'every alert crossed fires exactly once, after its crossing',
      measured: `${l.fired} of ${l.crossingsAccepted} crossings (of ${settings.alerts}) fired, ${l.firedTwice} twice, ${l.firedEarly} early`,
      pass:
        l.crossingsAccepted === settings.alerts &&
        l.fired === l.crossingsAccepted &&
        l.firedTwice === 0 &&
        l.firedEarly === 0,
    });
  }
  // each round runs both, back to back (the evaluator first in even rounds)
  const rounds = [...new Set(report.throughput.map((r) => r.round))].flatMap((round) => {
    const of = (evaluator: boolean) =>
      report.throughput.find((r) => r.round === round && r.evaluator === evaluator)?.eventsPerSecond;
    const [variant, baseline] = [of(true), of(false)];
    return variant !== undefined && baseline ? [{ variant, baseline }] : [];
  });
  if (rounds.length) {
    const share = pairedShare(rounds);
    bars.push({
      bar: `ingest events/s with the evaluator >= ${BARS.throughputRatio} of without (median of the rounds' pairs)`,
      measured:
        `${round2(share.medianOfRounds)} (rounds: ${share.byRound.map(round2).join(', ')}; ` +
        `ratio of the means ${round2(share.ofMeans)})`,
      pass: share.medianOfRounds >= BARS.throughputRatio,
    });
  }
  return bars;
}

// --- helpers ------------------------------------------------------------------------------------

async function cleanUp(): Promise<void> {
  await dropDatabase(runId, log);
  await dropClickHouseDatabase(settings.clickhouseUrl, runId, log);
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
