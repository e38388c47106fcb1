/**
 * `npm run bench:client`: the Node client's UsageReporter (clients/node, its build) reporting
 * usage to the ingest service (uWS, as behind deploy/nginx) on real Redis and a Kafka test broker
 * of this run. The reporter runs in this process, the service in its own; each scenario runs
 * BENCH_WARMUP_SECONDS (default 3), then BENCH_DURATION_SECONDS (default 20) measured, then
 * close(); the figures count only events the service answered 201 within the measured window:
 *
 *   max     events reported as fast as the reporter takes them (report() awaited, so a full
 *           buffer holds the caller back): the sustained rate of one reporter on this machine
 *   steady  BENCH_CLIENT_RATE events/s (default 5,000), reported every 10 ms: the client's CPU per
 *           event at a load that leaves the machine room
 *
 * Reported: events/s, the client's CPU µs per event (this process: the loop that reports, the
 * reporter, its HTTP), the ingest service's, requests and retries. Checked: the service's own
 * counters accepted exactly the events the reporter says were sent, none twice.
 *
 * Other settings (env): BENCH_SCENARIOS (comma list, default max,steady), BENCH_ITEMS (metered
 * items the events spread over, default 100), BENCH_CONCURRENT_REQUESTS (the reporter's
 * maxConcurrentRequests, default 4, its own default), BENCH_PARTITIONS (topic partitions, default 64), DATABASE_URL
 * (admin URL; a database bench_client_<pid> is created and dropped). The Kafka test broker keeps
 * about 5 MB per partition; no sink reads it here, so a cut partition changes nothing measured.
 * Report: bench/results/client-<time>.json.
 */
import { setTimeout as sleep, setImmediate as yieldToLoop } from 'node:timers/promises';
import { UsageReporter } from '@billing-service/client';
import { createApiKey } from '../../libs/auth/index.js';
import { Database, migrate } from '../../libs/db/index.js';
import { createOrganization, setRateLimitOverride } from '../../libs/organizations/index.js';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { startKafkaTestBroker } from '../../test/helpers/kafka-test-broker.js';
import { startOwnRedisServer } from '../../test/helpers/redis-server.js';
import {
  cpuSeconds,
  createDatabase,
  dropDatabase,
  freePort,
  intEnv,
  logger,
  printTable,
  scenariosEnv,
  spawnEntry,
  stopChildren,
  stopProcess,
  waitForQuietMachine,
  waitUntilReady,
  writeReport,
} from '../support.js';

const SCENARIOS = ['max', 'steady'] as const;
type Scenario = (typeof SCENARIOS)[number];

const settings = {
  durationSeconds: intEnv('BENCH_DURATION_SECONDS', 20, 1),
  warmupSeconds: intEnv('BENCH_WARMUP_SECONDS', 3),
  rate: intEnv('BENCH_CLIENT_RATE', 5000, 100),
  items: intEnv('BENCH_ITEMS', 100, 1),
  concurrentRequests: intEnv('BENCH_CONCURRENT_REQUESTS', 4, 1),
  partitions: intEnv('BENCH_PARTITIONS', 64, 1),
  scenarios: scenariosEnv(SCENARIOS),
};

interface ScenarioResult {
  scenario: Scenario;
  machineBusyBefore: number;
  eventsPerSecond: number;
  events: number;
  requests: number;
  retried: number;
  /** How long a batch request took, from sending to its answer. */
  requestP50Ms: number;
  requestP99Ms: number;
  /** CPU time per event sent, in microseconds: this process (the client) and the ingest service. */
  cpuMicrosPerEvent: { client: number; ingest: number };
  /** The most events the reporter held at once (sampled every 100 ms). */
  maxBuffered: number;
}

const runId = `bench_client_${process.pid}`;
const log = logger('client');
const cleanups: (() => Promise<unknown>)[] = [];

try {
  await main();
} finally {
  await stopChildren('SIGKILL');
  for (const cleanup of cleanups.reverse()) await cleanup().catch((error) => log(`cleanup: ${error}`));
  await dropDatabase(runId, log);
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify(settings)}`);
  const databaseUrl = await createDatabase(runId);
  const { apiKey, itemIds } = await prepareDatabase(databaseUrl);
  const redis = await startOwnRedisServer();
  cleanups.push(() => redis.stop());
  const broker = await startKafkaTestBroker();
  cleanups.push(() => broker.stop());
  const topic = `${runId}_usage`;
  await broker.createTopic(topic, settings.partitions);

  const port = await freePort();
  const ingest = spawnEntry('services/ingest/main.ts', {
    env: {
      APP_ENV: 'production',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      INGEST_PORT: String(port),
      // uWebSockets.js, as behind deploy/nginx: the reporter's keys are printable ASCII
      INGEST_TRUSTED_PROXY: 'true',
      DATABASE_URL: databaseUrl,
      REDIS_URL: redis.url,
      KAFKA_BROKERS: broker.brokers.join(','),
      KAFKA_USAGE_TOPIC: topic,
      KAFKA_TOPIC_PARTITIONS: String(settings.partitions),
    },
  });
  await waitUntilReady(`http://127.0.0.1:${port}/healthz`, ingest);
  const baseUrl = `http://127.0.0.1:${port}${BASE_PATH}`;

  const results: ScenarioResult[] = [];
  let sent = 0;
  for (const scenario of settings.scenarios) {
    const busy = await waitForQuietMachine();
    log(`${scenario}: starts on a machine ${Math.round(busy * 100)}% busy`);
    const result = await measure(scenario, baseUrl, apiKey, itemIds, ingest.pid);
    results.push({ ...result.figures, machineBusyBefore: Math.round(busy * 100) / 100 });
    sent += result.sentInAll;
  }
  const counted = await ingestCounters(port);
  await stopProcess(ingest);

  console.log('');
  printTable(
    [
      'scenario',
      'events/s',
      'events',
      'requests',
      'retried',
      'request p50 ms',
      'p99 ms',
      'max held',
      'CPU µs/event: client',
      'ingest',
    ],
    results.map((r) => [
      r.scenario,
      r.eventsPerSecond,
      r.events,
      r.requests,
      r.retried,
      r.requestP50Ms,
      r.requestP99Ms,
      r.maxBuffered,
      r.cpuMicrosPerEvent.client,
      r.cpuMicrosPerEvent.ingest,
    ]),
  );
  const exact = counted.accepted === sent && counted.deduplicated === 0;
  console.log(
    `\nsent by the reporter ${sent}; accepted by the service ${counted.accepted}, repeats ${counted.deduplicated}: ` +
      (exact ? 'each event once' : 'MISMATCH'),
  );
  log(
    `report written to ${await writeReport('client', { settings, scenarios: results, counted, sent, exact })}`,
  );
  if (!exact) process.exitCode = 1;
}

/** One scenario: warm-up, the measured window, then close(); figures of the window only. */
async function measure(
  scenario: Scenario,
  baseUrl: string,
  apiKey: string,
  itemIds: number[],
  ingestPid: number | undefined,
): Promise<{ figures: Omit<ScenarioResult, 'machineBusyBefore'>; sentInAll: number }> {
  let requests = 0;
  let refused = 0;
  let measuring = false;
  const latencies: number[] = [];
  const reporter = new UsageReporter({
    baseUrl,
    apiKey,
    maxConcurrentRequests: settings.concurrentRequests,
    onRejected: ({ error }) => {
      refused++;
      log(`the service refused an event: ${error.message}`);
    },
    fetch: async (url, init) => {
      requests++;
      const started = performance.now();
      const response = await fetch(url, init);
      // until the answer's head: the service writes an answer at once, body and all
      if (measuring) latencies.push(performance.now() - started);
      return response;
    },
  });
  let maxBuffered = 0;
  const sampler = setInterval(() => {
    maxBuffered = Math.max(maxBuffered, reporter.stats.buffered);
  }, 100);
  let n = 0;
  const report = () =>
    reporter.report({ subscription_item_id: itemIds[n++ % itemIds.length]!, quantity: 0.12345678 });
  const run = async (seconds: number) => {
    const end = Date.now() + seconds * 1000;
    if (scenario === 'max') {
      while (Date.now() < end) {
        // an application reports between other work: the loop gives way now and then
        for (let i = 0; i < 500; i++) await report();
        await yieldToLoop();
      }
    } else {
      const perTick = settings.rate / 100;
      for (let tick = Date.now(); tick < end; tick += 10) {
        for (let i = 0; i < perTick; i++) await report();
        const wait = tick + 10 - Date.now();
        if (wait > 0) await sleep(wait);
      }
    }
  };
  log(`${scenario}: warm-up ${settings.warmupSeconds} s, then ${settings.durationSeconds} s`);
  await run(settings.warmupSeconds);
  await reporter.flush();
  const before = {
    ...reporter.stats,
    requests,
    cpu: process.cpuUsage(),
    ingest: await cpuSeconds(ingestPid),
  };
  const started = performance.now();
  measuring = true;
  await run(settings.durationSeconds);
  // events of the window still buffered are counted once sent, and so is their CPU
  await reporter.flush();
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(before.cpu);
  const ingestCpu = (await cpuSeconds(ingestPid)) - before.ingest;
  const after = { ...reporter.stats, requests };
  measuring = false;
  latencies.sort((a, b) => a - b);
  const percentile = (p: number) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0);
  clearInterval(sampler);
  const { unsent } = await reporter.close();
  if (unsent.length || refused) throw new Error(`${unsent.length} events unsent, ${refused} refused`);
  const events = after.sent - before.sent;
  const micros = (cpuSecondsUsed: number) =>
    Math.round((cpuSecondsUsed * 1e6 * 100) / Math.max(1, events)) / 100;
  return {
    figures: {
      scenario,
      eventsPerSecond: Math.round(events / seconds),
      events,
      requests: after.requests - before.requests,
      retried: after.retried - before.retried,
      requestP50Ms: percentile(0.5),
      requestP99Ms: percentile(0.99),
      cpuMicrosPerEvent: { client: micros((cpu.user + cpu.system) / 1e6), ingest: micros(ingestCpu) },
      maxBuffered,
    },
    sentInAll: reporter.stats.sent,
  };
}

/** The events the service accepted as new and as repeats, from its own counters. */
async function ingestCounters(port: number): Promise<{ accepted: number; deduplicated: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const value = (outcome: string) =>
    Number(
      new RegExp(`billing_ingest_events_total\\{outcome="${outcome}",reason=""\\} (\\d+)`).exec(text)?.[1] ??
        0,
    );
  return { accepted: value('accepted'), deduplicated: value('deduplicated') };
}

/** Migrations, one organization with a limit the run never meets, a subscription of metered items. */
async function prepareDatabase(databaseUrl: string): Promise<{ apiKey: string; itemIds: number[] }> {
  const db = new Database(databaseUrl, { poolSize: 2 });
  try {
    await migrate(db);
    const org = await createOrganization(db, { name: 'Client bench', plan: 'scale' });
    await setRateLimitOverride(db, org.id, 2_000_000_000);
    const { api_key: apiKey } = await createApiKey(db, { orgId: org.id, name: 'bench' });
    // Catalog and subscription written directly: the benchmark measures the client, not the console.
    const { rows } = await db.query<{ id: number }>(
      `WITH product AS (
         INSERT INTO products (org_id, name, pricing_type, category) VALUES ($1, 'API calls', 'usage', 'usage') RETURNING id
       ), customer AS (
         INSERT INTO customers (org_id, name) VALUES ($1, 'Bench customer') RETURNING id
       ), subscription AS (
         INSERT INTO subscriptions (org_id, customer_id, status, start_date, next_billing_date, billing_period,
           billing_anchor_day, current_period_start, current_period_end)
         SELECT $1, customer.id, 'active', now(), now() + interval '1 month', 'monthly', 1, now(), now() + interval '1 month'
           FROM customer RETURNING id
       )
       INSERT INTO subscription_items (org_id, subscription_id, product_id, unit_price, usage_type)
       SELECT $1, subscription.id, product.id, 0.01, 'metered'
         FROM subscription, product, generate_series(1, $2) RETURNING id`,
      [org.id, settings.items],
    );
    return { apiKey, itemIds: rows.map((row) => row.id) };
  } finally {
    await db.close();
  }
}
