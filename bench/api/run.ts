/**
 * `npm run bench:api`: the public REST API on real Postgres and Redis, loaded with one
 * organization of BENCH_CUSTOMERS customers (default 20,000) and BENCH_INVOICES invoices with two
 * items each (default 100,000), set-based (see load-data.ts), into a fresh database.
 *
 * The api service (services/api/main.ts) and a bare Fastify hello route (hello-server.ts) each run
 * as their own process; autocannon drives them from this one, BENCH_CONNECTIONS connections
 * (default 50) for BENCH_DURATION_SECONDS each (default 15) after BENCH_WARMUP_SECONDS (default
 * 3) of warm-up, on:
 *
 *   hello                 GET /hello (the baseline, same run)
 *   customer              GET /customers/{id}, a random customer per request
 *   invoices_page         GET /invoices?limit=100
 *   invoices_filtered     GET /invoices?status=POSTED&customer_id=<a customer with POSTED invoices>
 *   invoices_deep_page    GET /invoices?limit=100&offset=<invoices - 100>
 *   invoices_middle_page  GET /invoices?limit=100&offset=<invoices / 2>: no bar; since pages past
 *                         the middle are read from the other end, this is the costliest offset
 *   invoice_pdf           GET /invoices/{id}/pdf, a random invoice of 1,000 per request
 *
 * It prints req/s, p50, p99, throughput relative to the hello route and the bars:
 * customer p99 <= 20 ms; 100-invoice pages p99 <= 60 ms; the deep page's p99 no more than 3x the
 * first page's. The report goes to bench/results/api-<time>.json.
 *
 * Other settings (env): BENCH_SCENARIOS (comma list, default all), BENCH_DB_POOL_SIZE (the api's
 * DATABASE_POOL_SIZE, default 20), DATABASE_URL (an admin URL; a database bench_api_<pid> is
 * created in it and dropped afterwards unless BENCH_KEEP_DATABASE=true), REDIS_URL, BENCH_PROFILE_DIR
 * (the api process writes a V8 CPU profile there), BENCH_API_NODE_FLAGS (more Node flags for the
 * api, e.g. `--trace-gc-nvp`).
 */
import { createApiKey } from '../../libs/auth/index.js';
import { Database, migrate } from '../../libs/db/index.js';
import { setRateLimitOverride } from '../../libs/organizations/index.js';
import { connectRedis } from '../../libs/redis/index.js';
import { BASE_PATH } from '../../libs/schemas/index.js';
import {
  autocannon,
  cpuMicrosPerRequest,
  cpuSnapshot,
  createDatabase,
  dropDatabase,
  intEnv,
  logger,
  printBars,
  printTable,
  randomRequest,
  requestBytes,
  scenariosEnv,
  spawnEntry,
  startApiProcess,
  stopChildren,
  waitForLine,
  writeReport,
} from '../support.js';
import { type BenchData, loadBenchData } from './load-data.js';

const SCENARIOS = [
  'hello',
  'customer',
  'invoices_page',
  'invoices_filtered',
  'invoices_deep_page',
  'invoices_middle_page',
  'invoice_pdf',
] as const;
type Scenario = (typeof SCENARIOS)[number];

const settings = {
  customers: intEnv('BENCH_CUSTOMERS', 20_000),
  invoices: intEnv('BENCH_INVOICES', 100_000),
  connections: intEnv('BENCH_CONNECTIONS', 50),
  durationSeconds: intEnv('BENCH_DURATION_SECONDS', 15),
  warmupSeconds: intEnv('BENCH_WARMUP_SECONDS', 3),
  poolSize: intEnv('BENCH_DB_POOL_SIZE', 20),
  scenarios: scenariosEnv(SCENARIOS),
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  keepDatabase: process.env.BENCH_KEEP_DATABASE === 'true',
};

const BARS = { customerP99Ms: 20, invoicePageP99Ms: 60, deepPageRatio: 3 };

interface ScenarioResult {
  scenario: Scenario;
  request: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** CPU time per request during the measured run, in microseconds, by process. */
  cpuMicrosPerRequest: { server: number; postgres: number; redis: number; autocannon: number };
}

const databaseName = `bench_api_${process.pid}`;
const redisPrefix = `bench_api_${process.pid}:`;
const log = logger('api');

try {
  await main();
} finally {
  await stopChildren();
  await cleanUp();
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify({ ...settings, redisUrl: undefined })}`);
  const databaseUrl = await createDatabase(databaseName);
  const db = new Database(databaseUrl, { poolSize: 2 });
  let data: BenchData;
  let apiKey: string;
  try {
    await migrate(db);
    const loadStart = Date.now();
    data = await loadBenchData(db, {
      customers: settings.customers,
      invoices: settings.invoices,
      progress: (message) => log(`  ${message}`),
    });
    log(`data loaded in ${((Date.now() - loadStart) / 1000).toFixed(1)} s`);
    // high enough that the run never meets the hourly limit (the limiter still runs per request)
    await setRateLimitOverride(db, data.orgId, 2_000_000_000);
    apiKey = (await createApiKey(db, { orgId: data.orgId, name: 'bench' })).api_key;
  } finally {
    await db.close();
  }

  const hello = spawnEntry('bench/api/hello-server.ts', { stdio: ['ignore', 'pipe', 'inherit'] });
  const helloPort = (JSON.parse(await waitForLine(hello)) as { port: number }).port;
  const { child: api, base: apiBase } = await startApiProcess({
    databaseUrl,
    poolSize: settings.poolSize,
    redisUrl: settings.redisUrl,
    redisPrefix,
  });

  const deepOffset = Math.max(0, data.invoices - 100);
  const middleOffset = Math.floor(data.invoices / 2);
  const targets: Record<Scenario, { url: string; request: string; paths?: string[] }> = {
    hello: { url: `http://127.0.0.1:${helloPort}/hello`, request: 'GET /hello' },
    customer: {
      url: apiBase,
      request: 'GET /customers/{id}',
      paths: Array.from({ length: data.customers }, (_, i) => `${BASE_PATH}/customers/${i + 1}`),
    },
    invoices_page: { url: `${apiBase}${BASE_PATH}/invoices?limit=100`, request: 'GET /invoices?limit=100' },
    invoices_filtered: {
      url: `${apiBase}${BASE_PATH}/invoices?status=POSTED&customer_id=${data.postedCustomerId}`,
      request: `GET /invoices?status=POSTED&customer_id=${data.postedCustomerId}`,
    },
    invoices_deep_page: {
      url: `${apiBase}${BASE_PATH}/invoices?limit=100&offset=${deepOffset}`,
      request: `GET /invoices?limit=100&offset=${deepOffset}`,
    },
    invoices_middle_page: {
      url: `${apiBase}${BASE_PATH}/invoices?limit=100&offset=${middleOffset}`,
      request: `GET /invoices?limit=100&offset=${middleOffset}`,
    },
    invoice_pdf: {
      url: apiBase,
      request: 'GET /invoices/{id}/pdf',
      paths: data.invoiceIds.map((id) => `${BASE_PATH}/invoices/${id}/pdf`),
    },
  };

  const results: ScenarioResult[] = [];
  for (const scenario of settings.scenarios) {
    const target = targets[scenario];
    const headers = scenario === 'hello' ? undefined : { authorization: `Bearer ${apiKey}` };
    const options = {
      url: target.url,
      connections: settings.connections,
      ...(headers ? { headers } : {}),
      ...(target.paths
        ? {
            requests: [
              randomRequest(target.paths.map((path) => requestBytes(`${target.url}${path}`, { headers }))),
            ],
          }
        : {}),
    };
    log(`${scenario}: warm-up ${settings.warmupSeconds} s, then ${settings.durationSeconds} s`);
    if (settings.warmupSeconds > 0) await autocannon({ ...options, duration: settings.warmupSeconds });
    const cpuBefore = await cpuSnapshot(scenario === 'hello' ? hello.pid : api.pid);
    const result = await autocannon({ ...options, duration: settings.durationSeconds });
    const cpuAfter = await cpuSnapshot(scenario === 'hello' ? hello.pid : api.pid);
    results.push({
      scenario,
      request: target.request,
      requestsPerSecond: result.requests.average,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      maxMs: result.latency.max,
      requests: result.requests.total,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
      cpuMicrosPerRequest: cpuMicrosPerRequest(cpuBefore, cpuAfter, result.requests.total),
    });
  }

  const report = evaluate(results);
  printResults(results, report.bars);
  const file = await writeReport('api', {
    settings: { ...settings, redisUrl: undefined },
    results,
    bars: report.bars,
  });
  log(`report: ${file}`);
  if (report.bars.some((bar) => bar.pass === false)) process.exitCode = 1;
}

interface Bar {
  bar: string;
  measured: string;
  pass: boolean | undefined;
}

function evaluate(results: ScenarioResult[]): { bars: Bar[] } {
  const of = (scenario: Scenario) => results.find((r) => r.scenario === scenario);
  const bars: Bar[] = [];
  for (const result of results) {
    if (result.non2xx > 0 || result.errors > 0) {
      bars.push({
        bar: `${result.scenario}: every response 2xx`,
        measured: `${result.non2xx} non-2xx, ${result.errors} errors`,
        pass: false,
      });
    }
  }
  const customer = of('customer');
  if (customer) {
    bars.push({
      bar: `GET /customers/{id} p99 <= ${BARS.customerP99Ms} ms`,
      measured: `${customer.p99Ms} ms`,
      pass: customer.p99Ms <= BARS.customerP99Ms,
    });
  }
  for (const scenario of ['invoices_page', 'invoices_deep_page'] as const) {
    const page = of(scenario);
    if (!page) continue;
    bars.push({
      bar: `${page.request} p99 <= ${BARS.invoicePageP99Ms} ms (${settings.connections} connections)`,
      measured: `${page.p99Ms} ms`,
      pass: page.p99Ms <= BARS.invoicePageP99Ms,
    });
  }
  const first = of('invoices_page');
  const deep = of('invoices_deep_page');
  if (first && deep) {
    const ratio = deep.p99Ms / Math.max(first.p99Ms, 1);
    bars.push({
      bar: `deep page p99 <= ${BARS.deepPageRatio}x first page p99`,
      measured: `${ratio.toFixed(2)}x`,
      pass: ratio <= BARS.deepPageRatio,
    });
  }
  return { bars };
}

function printResults(results: ScenarioResult[], bars: Bar[]): void {
  const hello = results.find((r) => r.scenario === 'hello');
  const rows = results.map((r) => [
    r.scenario,
    r.request.length > 48 ? `${r.request.slice(0, 45)}...` : r.request,
    r.requestsPerSecond.toFixed(0),
    String(r.p50Ms),
    String(r.p99Ms),
    hello ? `${((100 * r.requestsPerSecond) / hello.requestsPerSecond).toFixed(1)} %` : '-',
    r.non2xx + r.errors > 0 ? `${r.non2xx + r.errors} failed` : 'ok',
    r.cpuMicrosPerRequest.server,
    r.cpuMicrosPerRequest.postgres,
    r.cpuMicrosPerRequest.redis,
    r.cpuMicrosPerRequest.autocannon,
  ]);
  printTable(
    [
      'scenario',
      'request',
      'req/s',
      'p50 ms',
      'p99 ms',
      'req/s vs hello',
      'responses',
      'CPU µs/req: server',
      'postgres',
      'redis',
      'autocannon',
    ],
    rows,
  );
  printBars(bars);
}

async function cleanUp(): Promise<void> {
  if (!settings.keepDatabase) {
    await dropDatabase(databaseName, log);
  } else {
    log(`kept database ${databaseName}`);
  }
  const redis = await connectRedis(settings.redisUrl, 2000).catch(() => undefined);
  if (!redis) return;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
