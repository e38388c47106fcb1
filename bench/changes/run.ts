/**
 * `npm run bench:changes`: POST /subscriptions/{id}/changes (issue 24) on real Postgres and Redis.
 * One organization with BENCH_SUBSCRIPTIONS active monthly subscriptions (default 2,000), one
 * licensed item each, in the middle of their period, loaded set-based into a fresh database. The
 * api service (services/api/main.ts) and a bare Fastify hello route (bench/api/hello-server.ts)
 * each run as their own process; autocannon drives them from this one with BENCH_CONNECTIONS
 * connections (default 20) for BENCH_DURATION_SECONDS each (default 15) after
 * BENCH_WARMUP_SECONDS (default 3) of warm-up, on:
 *
 *   hello      GET /hello (the baseline, same run)
 *   preview    POST .../changes {"items":[{"id":..,"quantity":q}],"preview":true}, a random
 *              subscription and quantity per request: the whole change in a savepoint rolled back
 *   change     the same without preview: row lock, proration lines written, subscription.updated
 *              in the outbox, the subscription read back
 *
 * After each warm-up the database is analyzed, as autovacuum would (see analyze()).
 *
 * It prints req/s, p50, p90, p97.5, p99, CPU per request by process, and the bar: change p99 <= 30 ms at 20
 * connections. The report goes to bench/results/changes-<time>.json.
 *
 * Other settings (env): BENCH_SCENARIOS (comma list, default all), BENCH_DB_POOL_SIZE (the api's
 * DATABASE_POOL_SIZE, default 20), DATABASE_URL (an admin URL; a database bench_changes_<pid> is
 * created in it and dropped afterwards), REDIS_URL, BENCH_PROFILE_DIR (a directory: the api
 * writes a V8 CPU profile of its run there), BENCH_API_NODE_FLAGS (more Node flags for the api).
 */
import { createApiKey } from '../../libs/auth/index.js';
import { createProduct } from '../../libs/catalog/index.js';
import { Database, migrate } from '../../libs/db/index.js';
import { createOrganization, setRateLimitOverride } from '../../libs/organizations/index.js';
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

const SCENARIOS = ['hello', 'preview', 'change'] as const;
type Scenario = (typeof SCENARIOS)[number];

const settings = {
  subscriptions: intEnv('BENCH_SUBSCRIPTIONS', 2000, 1),
  connections: intEnv('BENCH_CONNECTIONS', 20),
  durationSeconds: intEnv('BENCH_DURATION_SECONDS', 15),
  warmupSeconds: intEnv('BENCH_WARMUP_SECONDS', 3),
  poolSize: intEnv('BENCH_DB_POOL_SIZE', 20),
  scenarios: scenariosEnv(SCENARIOS),
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
};
const BAR_P99_MS = 30;

interface ScenarioResult {
  scenario: Scenario;
  request: string;
  requestsPerSecond: number;
  p50Ms: number;
  p90Ms: number;
  p97_5Ms: number;
  p99Ms: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  errors: number;
  cpuMicrosPerRequest: { server: number; postgres: number; redis: number; autocannon: number };
}

const databaseName = `bench_changes_${process.pid}`;
const redisPrefix = `bench_changes_${process.pid}:`;
const log = logger('changes');

try {
  await main();
} finally {
  await stopChildren();
  await cleanUp();
}

/** Active monthly subscriptions, one licensed item each, in the middle of the running month. */
async function loadData(db: Database) {
  const org = await createOrganization(db, { name: 'Bench Changes Co' });
  const seats = await createProduct(db, org.id, {
    name: 'Seats',
    pricing_type: 'recurring',
    unit_price: '25.00',
  });
  const now = new Date();
  const periodStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const periodEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  await db.query(
    `INSERT INTO customers (org_id, name, country, state_province)
     SELECT $1, 'Customer ' || n, 'CA', 'ON' FROM generate_series(1, 500) n`,
    [org.id],
  );
  await db.query(
    `INSERT INTO subscriptions (org_id, customer_id, status, title, currency, start_date, next_billing_date,
       billing_period, billing_anchor_day, current_period_start, current_period_end)
     SELECT $1, c.id, 'active', 'Bench ' || n, 'CAD', $3, $4, 'monthly', 1, $3, $4
       FROM generate_series(1, $2) n
       JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS i FROM customers WHERE org_id = $1) c
         ON c.i = n % 500`,
    [org.id, settings.subscriptions, periodStart, periodEnd],
  );
  const { rows } = await db.query<{ subscription_id: number; id: number }>(
    `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type)
     SELECT $1, id, $2, 1 + id % 10, '25.00', 'licensed' FROM subscriptions WHERE org_id = $1
     RETURNING subscription_id, id`,
    [org.id, seats.id],
  );
  return { orgId: org.id, items: rows };
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify({ ...settings, redisUrl: undefined })}`);
  const databaseUrl = await createDatabase(databaseName);
  const db = new Database(databaseUrl, { poolSize: 2 });
  let data: Awaited<ReturnType<typeof loadData>>;
  let apiKey: string;
  try {
    await migrate(db);
    data = await loadData(db);
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

  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  // three quantities per subscription: most requests change the quantity, so write two lines
  const changeRequests = (preview: boolean) =>
    data.items.flatMap((item) =>
      [1, 4, 9].map((quantity) =>
        requestBytes(`${apiBase}${BASE_PATH}/subscriptions/${item.subscription_id}/changes`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ items: [{ id: item.id, quantity }], ...(preview ? { preview: true } : {}) }),
        }),
      ),
    );
  const targets: Record<Scenario, { url: string; request: string; variants?: Buffer[] }> = {
    hello: { url: `http://127.0.0.1:${helloPort}/hello`, request: 'GET /hello' },
    preview: {
      url: apiBase,
      request: 'POST /subscriptions/{id}/changes (preview)',
      variants: changeRequests(true),
    },
    change: { url: apiBase, request: 'POST /subscriptions/{id}/changes', variants: changeRequests(false) },
  };

  const results: ScenarioResult[] = [];
  for (const scenario of settings.scenarios) {
    const target = targets[scenario];
    const options = {
      url: target.url,
      connections: settings.connections,
      ...(target.variants ? { requests: [randomRequest(target.variants)] } : {}),
    };
    log(`${scenario}: warm-up ${settings.warmupSeconds} s, then ${settings.durationSeconds} s`);
    if (settings.warmupSeconds > 0) await autocannon({ ...options, duration: settings.warmupSeconds });
    await analyze(databaseUrl);
    const pid = scenario === 'hello' ? hello.pid : api.pid;
    const cpuBefore = await cpuSnapshot(pid);
    const result = await autocannon({ ...options, duration: settings.durationSeconds });
    const cpuAfter = await cpuSnapshot(pid);
    results.push({
      scenario,
      request: target.request,
      requestsPerSecond: result.requests.average,
      p50Ms: result.latency.p50,
      p90Ms: result.latency.p90,
      p97_5Ms: result.latency.p97_5,
      p99Ms: result.latency.p99,
      maxMs: result.latency.max,
      requests: result.requests.total,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
      cpuMicrosPerRequest: cpuMicrosPerRequest(cpuBefore, cpuAfter, result.requests.total),
    });
  }

  const bars: { bar: string; measured: string; pass: boolean | undefined }[] = [];
  for (const result of results) {
    if (result.non2xx > 0 || result.errors > 0) {
      bars.push({
        bar: `${result.scenario}: every response 2xx`,
        measured: `${result.non2xx} non-2xx, ${result.errors} errors`,
        pass: false,
      });
    }
  }
  const change = results.find((r) => r.scenario === 'change');
  if (change) {
    bars.push({
      bar: `POST /subscriptions/{id}/changes p99 <= ${BAR_P99_MS} ms (${settings.connections} connections)`,
      measured: `${change.p99Ms} ms`,
      pass: change.p99Ms <= BAR_P99_MS,
    });
  }
  const hello0 = results.find((r) => r.scenario === 'hello');
  printTable(
    [
      'scenario',
      'request',
      'req/s',
      'p50 ms',
      'p90 ms',
      'p97.5 ms',
      'p99 ms',
      'req/s vs hello',
      'responses',
      'CPU µs/req: server',
      'postgres',
      'redis',
      'autocannon',
    ],
    results.map((r) => [
      r.scenario,
      r.request,
      r.requestsPerSecond.toFixed(0),
      String(r.p50Ms),
      String(r.p90Ms),
      String(r.p97_5Ms),
      String(r.p99Ms),
      hello0 ? `${((100 * r.requestsPerSecond) / hello0.requestsPerSecond).toFixed(1)} %` : '-',
      r.non2xx + r.errors > 0 ? `${r.non2xx + r.errors} failed` : 'ok',
      r.cpuMicrosPerRequest.server,
      r.cpuMicrosPerRequest.postgres,
      r.cpuMicrosPerRequest.redis,
      r.cpuMicrosPerRequest.autocannon,
    ]),
  );
  printBars(bars);
  const file = await writeReport('changes', {
    settings: { ...settings, redisUrl: undefined },
    results,
    bars,
  });
  log(`report: ${file}`);
  if (bars.some((bar) => bar.pass === false)) process.exitCode = 1;
}

/**
 * What autovacuum does on a server that has it on (this VM's Postgres runs with it off): the
 * statistics of tables the warm-up grew. ANALYZE also drops the plans the api's connections cached
 * while subscription_proration_lines was empty (a generic plan that scanned the whole table for
 * every change, 3x the Postgres CPU of one that uses its index).
 */
async function analyze(databaseUrl: string): Promise<void> {
  const db = new Database(databaseUrl, { poolSize: 1 });
  try {
    await db.query('ANALYZE');
  } finally {
    await db.close();
  }
}

async function cleanUp(): Promise<void> {
  await dropDatabase(databaseName, log);
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
