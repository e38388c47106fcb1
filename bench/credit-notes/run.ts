/**
 * `npm run bench:credit-notes`: POST /invoices/{id}/credit-notes (issue 34) on real Postgres and
 * Redis, distributed mode (the api service from dist/, as the image runs it). One organization
 * with BENCH_INVOICES posted invoices (default 100, one 10,000.00 line each, Ontario HST),
 * loaded set-based into a fresh database. BENCH_CLIENTS concurrent clients (default 20: autocannon
 * connections, prebuilt requests, `amount` so it stops at exactly BENCH_NOTES) create BENCH_NOTES
 * credit notes (default 1,000) of 1.00 on a random invoice each: every note locks its invoice, bumps
 * the organization's counter row, writes a CREDIT_MEMO, the note and its lines, and
 * credit_note.created in the outbox; the api issues concurrent notes in one transaction (group
 * commit), and the report says how many notes each carried. A warm-up of BENCH_WARMUP_NOTES
 * (default 100) goes to a second organization first, so the measured one numbers from CN-000001;
 * the database is analyzed after it, as autovacuum would.
 *
 * It prints notes/s, p50, p90, p99 and max latency, CPU per note by process (Postgres twice: every
 * postgres process, and this run's database alone), the bar (p99 <= 50 ms at 20 clients) and
 * checks that the organization's numbers are exactly CN-000001..CN-<notes>, each once, and that
 * every invoice's balance is its total less its notes. The report goes to
 * bench/results/credit-notes-<time>.json.
 *
 * Other settings (env): BENCH_DB_POOL_SIZE (the api's DATABASE_POOL_SIZE, default 20),
 * DATABASE_URL (an admin URL; a database bench_credit_notes_<pid> is created in it and dropped
 * afterwards), REDIS_URL, BENCH_PROFILE_DIR (a directory: the api writes a V8 CPU profile there),
 * BENCH_API_NODE_FLAGS (more Node flags for the api).
 */
import { performance } from 'node:perf_hooks';
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
  postgresCpuSeconds,
  printBars,
  printTable,
  randomRequest,
  requestBytes,
  startApiProcess,
  stopChildren,
  writeReport,
} from '../support.js';

const settings = {
  invoices: intEnv('BENCH_INVOICES', 100, 1),
  notes: intEnv('BENCH_NOTES', 1000, 1),
  warmupNotes: intEnv('BENCH_WARMUP_NOTES', 100),
  clients: intEnv('BENCH_CLIENTS', 20, 1),
  poolSize: intEnv('BENCH_DB_POOL_SIZE', 20),
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
};
const BAR_P99_MS = 50;

const databaseName = `bench_credit_notes_${process.pid}`;
const redisPrefix = `bench_credit_notes_${process.pid}:`;
const log = logger('credit-notes');

try {
  await main();
} finally {
  await stopChildren();
  await cleanUp();
}

interface Target {
  invoiceId: string;
  itemId: number;
}

/** An organization with `invoices` POSTED invoices of one 10,000.00 line (HST 13 %: 11,300.00). */
async function loadOrganization(db: Database, name: string, invoices: number) {
  const org = await createOrganization(db, { name });
  await setRateLimitOverride(db, org.id, 2_000_000_000);
  const apiKey = (await createApiKey(db, { orgId: org.id, name: 'bench' })).api_key;
  const seats = await createProduct(db, org.id, {
    name: 'Seats',
    pricing_type: 'recurring',
    unit_price: '100.00',
  });
  await db.query(
    `INSERT INTO customers (org_id, name, country, state_province)
     SELECT $1, 'Customer ' || n, 'CA', 'ON' FROM generate_series(1, $2) n`,
    [org.id, invoices],
  );
  await db.query(
    `INSERT INTO subscriptions (org_id, customer_id, status, title, currency, start_date, next_billing_date,
       billing_period, billing_anchor_day, current_period_start, current_period_end)
     SELECT $1, id, 'active', 'Bench', 'CAD', '2026-01-01', '2026-02-01', 'monthly', 1, '2026-01-01', '2026-02-01'
       FROM customers WHERE org_id = $1`,
    [org.id],
  );
  await db.query(
    `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type)
     SELECT $1, id, $2, 100, '100.00', 'licensed' FROM subscriptions WHERE org_id = $1`,
    [org.id, seats.id],
  );
  await db.query(
    `INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start, period_end,
       due_date, status, subtotal, tax_amount, total, currency, posted_at)
     SELECT $1, 'INV-' || lpad(s.id::text, 6, '0'), s.customer_id, s.id, '2026-01-01', '2026-01-01', '2026-01-31',
            '2026-01-31', 'POSTED', 10000, 1300, 11300, 'CAD', now()
       FROM subscriptions s WHERE s.org_id = $1`,
    [org.id],
  );
  const { rows } = await db.query<{ invoice_id: string; item_id: number }>(
    `INSERT INTO invoice_items (org_id, invoice_id, position, product_id, subscription_item_id, description, quantity,
       unit_price, line_total_pre_tax, tax_amount, tax_type)
     SELECT $1, i.id, 0, $2, si.id, 'Seats', 100, 100, 10000, 1300, 'HST'
       FROM invoices i JOIN subscription_items si ON si.org_id = i.org_id AND si.subscription_id = i.subscription_id
      WHERE i.org_id = $1
     RETURNING invoice_id, id AS item_id`,
    [org.id, seats.id],
  );
  const targets: Target[] = rows.map((row) => ({ invoiceId: row.invoice_id, itemId: Number(row.item_id) }));
  return { orgId: org.id, apiKey, targets };
}

/**
 * `count` notes of 1.00, each on a random invoice, by autocannon over `clients` connections
 * (`amount`: it stops after exactly that many). Prebuilt requests, so the instrument costs little
 * CPU beside the api (bench/autocannon-adapter.ts).
 */
function createNotes(base: string, apiKey: string, targets: Target[], count: number, clients: number) {
  const variants = targets.map((target) =>
    requestBytes(`${base}${BASE_PATH}/invoices/${target.invoiceId}/credit-notes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        reason: 'order_change',
        lines: [{ invoice_item_id: target.itemId, amount: '1.00' }],
      }),
    }),
  );
  return autocannon({
    url: base,
    connections: clients,
    amount: count,
    duration: 600,
    requests: [randomRequest(variants)],
  });
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify({ ...settings, redisUrl: undefined })}`);
  const databaseUrl = await createDatabase(databaseName);
  const db = new Database(databaseUrl, { poolSize: 2 });
  let measured: Awaited<ReturnType<typeof loadOrganization>>;
  let warmup: Awaited<ReturnType<typeof loadOrganization>>;
  try {
    await migrate(db);
    measured = await loadOrganization(db, 'Bench Credit Notes Co', settings.invoices);
    warmup = await loadOrganization(db, 'Bench Warm-up Co', Math.min(settings.invoices, 20));
    await db.query('ANALYZE');
  } finally {
    await db.close();
  }

  const { child: api, base } = await startApiProcess({
    databaseUrl,
    poolSize: settings.poolSize,
    redisUrl: settings.redisUrl,
    redisPrefix,
  });

  if (settings.warmupNotes > 0) {
    log(`warm-up: ${settings.warmupNotes} notes in a second organization`);
    const warm = await createNotes(
      base,
      warmup.apiKey,
      warmup.targets,
      settings.warmupNotes,
      settings.clients,
    );
    if (warm.non2xx + warm.errors > 0) log(`warm-up: ${warm.non2xx} non-2xx, ${warm.errors} errors`);
    // what autovacuum would do once the tables grew (see bench/changes/run.ts): the plans the
    // api's connections cached while credit_notes was empty are replaced
    const analyze = new Database(databaseUrl, { poolSize: 1 });
    try {
      await analyze.query('ANALYZE');
    } finally {
      await analyze.close();
    }
  }

  log(`measured: ${settings.notes} notes by ${settings.clients} clients over ${settings.invoices} invoices`);
  const cpuBefore = await cpuSnapshot(api.pid);
  // the backends of this run's database and the cluster's own processes only: on a shared machine
  // the postgres column above counts other engineers' databases too
  const ourPostgresBefore = await postgresCpuSeconds(databaseName);
  const started = performance.now();
  const run = await createNotes(base, measured.apiKey, measured.targets, settings.notes, settings.clients);
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = await cpuSnapshot(api.pid);
  const ourPostgresAfter = await postgresCpuSeconds(databaseName);
  const result = {
    notes: run.requests.total,
    failures: run.non2xx + run.errors + run.timeouts,
    seconds: Number(seconds.toFixed(2)),
    notesPerSecond: Number((run.requests.total / seconds).toFixed(1)),
    p50Ms: run.latency.p50,
    p90Ms: run.latency.p90,
    p99Ms: run.latency.p99,
    maxMs: run.latency.max,
    cpuMicrosPerNote: {
      ...cpuMicrosPerRequest(cpuBefore, cpuAfter, run.requests.total),
      postgresOfThisDatabase: Math.round(
        ((ourPostgresAfter - ourPostgresBefore) * 1e6) / Math.max(1, run.requests.total),
      ),
    },
  };

  // the numbering and the money, read back from the database
  const check = new Database(databaseUrl, { poolSize: 1 });
  let numbering: {
    count: number;
    distinct: number;
    first: string | null;
    last: string | null;
    gapless: boolean;
  };
  let balancesExact: boolean;
  let transactions: number;
  try {
    const { rows } = await check.query<{ number: string }>(
      'SELECT number FROM credit_notes WHERE org_id = $1 ORDER BY number',
      [measured.orgId],
    );
    const expected = Array.from({ length: settings.notes }, (_, i) => `CN-${String(i + 1).padStart(6, '0')}`);
    const numbers = rows.map((row) => row.number);
    numbering = {
      count: numbers.length,
      distinct: new Set(numbers).size,
      first: numbers[0] ?? null,
      last: numbers.at(-1) ?? null,
      gapless: numbers.length === expected.length && numbers.every((number, i) => number === expected[i]),
    };
    const wrong = await check.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM invoices i
        WHERE i.org_id = $1
          AND i.amount_paid <> coalesce((SELECT sum(n.applied_to_invoice) FROM credit_notes n WHERE n.invoice_id = i.id), 0)`,
      [measured.orgId],
    );
    balancesExact = wrong.rows[0]!.n === 0;
    // the notes one transaction inserted share its xmin: how many notes a group commit carried
    const groups = await check.query<{ transactions: number }>(
      `SELECT count(DISTINCT xmin::text)::int AS transactions FROM credit_notes WHERE org_id = $1`,
      [measured.orgId],
    );
    transactions = groups.rows[0]!.transactions;
  } finally {
    await check.close();
  }

  printTable(
    [
      'request',
      'notes',
      'notes/s',
      'p50 ms',
      'p90 ms',
      'p99 ms',
      'max ms',
      'failed',
      'notes/txn',
      'CPU µs/note: api',
      'postgres',
      'postgres: this db',
      'redis',
      'autocannon',
    ],
    [
      [
        'POST /invoices/{id}/credit-notes',
        result.notes,
        result.notesPerSecond,
        result.p50Ms,
        result.p90Ms,
        result.p99Ms,
        result.maxMs,
        result.failures,
        Number((result.notes / transactions).toFixed(1)),
        result.cpuMicrosPerNote.server,
        result.cpuMicrosPerNote.postgres,
        result.cpuMicrosPerNote.postgresOfThisDatabase,
        result.cpuMicrosPerNote.redis,
        result.cpuMicrosPerNote.autocannon,
      ],
    ],
  );
  const bars = [
    {
      bar: `POST /invoices/{id}/credit-notes p99 <= ${BAR_P99_MS} ms (${settings.clients} clients)`,
      measured: `${result.p99Ms} ms`,
      pass: result.p99Ms <= BAR_P99_MS,
    },
    { bar: 'every note answered 201', measured: `${result.failures} failed`, pass: result.failures === 0 },
    {
      bar: `numbers CN-000001..CN-${String(settings.notes).padStart(6, '0')}, each once`,
      measured: `${numbering.count} notes, ${numbering.distinct} distinct, ${numbering.first}..${numbering.last}`,
      pass: numbering.gapless,
    },
    {
      bar: "each invoice's amount_paid = the sum of its notes' credit memos",
      measured: balancesExact ? 'exact' : 'mismatch',
      pass: balancesExact,
    },
  ];
  printBars(bars);
  const file = await writeReport('credit-notes', {
    settings: { ...settings, redisUrl: undefined },
    result: { ...result, transactions },
    numbering,
    bars,
  });
  log(`report: ${file}`);
  if (bars.some((bar) => !bar.pass)) process.exitCode = 1;
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
