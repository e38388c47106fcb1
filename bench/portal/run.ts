/**
 * bench:portal — the customer portal page (docs/architecture.md, "Customer portal") rendered server-side: one customer with
 * 24 months of invoices (3 lines each) among 2,000 other invoices of the organization, a
 * subscription with two metered items and a 31-day chart each.
 *
 * Prints: the page's server-side render time (p50/p99/max over BENCH_RENDERS sequential requests
 * through Fastify's inject: routing, the session lookup, every query and the HTML; no network),
 * the bar (p99 <= 50 ms), the page's weight (HTML + stylesheet + icon: everything it loads but
 * the PDFs; bar < 100 KB), autocannon's throughput and latency over BENCH_DURATION seconds against
 * the same server beside GET /healthz (the baseline), and PDF rendering per document.
 *
 * The usage figures come from real usage events (one a day per metered item) through the api's own
 * PortalUsageSource, the usage read-back: its queries are in these figures.
 * Env: BENCH_RENDERS (default 1000), BENCH_DURATION (10), BENCH_CONNECTIONS (10), DATABASE_URL.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { apiSettings, loadConfig } from '../../libs/config/index.js';
import { migrate } from '../../libs/db/index.js';
import { loadPrintableInvoice, renderInvoicePdf } from '../../libs/invoice-documents/index.js';
import { openPlatform } from '../../libs/platform/index.js';
import { createPortalSession } from '../../libs/portal/index.js';
import { openUsageIngest, PostgresUsageSink } from '../../libs/usage/index.js';
import { apiDepsFrom, buildApiApp } from '../../services/api/app.js';
import {
  commandCpuSeconds,
  createDatabase,
  dropDatabase,
  intEnv,
  logger,
  printBars,
  printTable,
  ROOT,
  waitForQuietMachine,
  writeReport,
} from '../support.js';

const log = logger('portal');
const RENDERS = intEnv('BENCH_RENDERS', 1000, 10);
const DURATION = intEnv('BENCH_DURATION', 10, 1);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 10, 1);
const P99_BAR_MS = 50;
const WEIGHT_BAR_BYTES = 100 * 1024;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const dbName = `bench_portal_${process.pid}`;
const url = await createDatabase(dbName);
try {
  const config = loadConfig(apiSettings, { DATABASE_URL: url, LOG_LEVEL: 'silent', APP_ENV: 'test' });
  const platform = await openPlatform(config, 'bench-portal');
  await migrate(platform.db);
  const { db } = platform;

  log('loading one customer with 24 monthly invoices among 2,000 others');
  const { rows: orgRows } = await db.query<{ id: number }>(
    `INSERT INTO organizations (name, plan, address_line1, city, state_province, postal_code, country, tax_id)
     VALUES ('Bench Billing Inc.', 'scale', '1 Bench Street', 'Montréal', 'QC', 'H2X 1Y4', 'CA', 'RT0001') RETURNING id`,
  );
  const orgId = orgRows[0]!.id;
  await db.query(
    `INSERT INTO products (org_id, name, sku, unit_price, pricing_type, category)
     VALUES ($1, 'Seats', 'SEAT', 49.99, 'recurring', 'software'), ($1, 'API calls', 'API', 0.002, 'usage', 'usage'),
            ($1, 'Storage', 'GB', 0.1, 'usage', 'usage')`,
    [orgId],
  );
  await db.query(
    `INSERT INTO customers (org_id, name, email, city, state_province, postal_code, country)
     SELECT $1, 'Customer ' || g, 'c' || g || '@example.com', 'Montréal', 'QC', 'H2X 1Y4', 'CA' FROM generate_series(1, 101) g`,
    [orgId],
  );
  await db.query(
    `INSERT INTO subscriptions (org_id, customer_id, status, title, start_date, next_billing_date, billing_period,
       billing_anchor_day, current_period_start, current_period_end)
     SELECT $1, c.id, 'active', 'Team plan', '2024-11-01', '2026-12-01', 'monthly', 1, '2026-10-01', '2026-11-01'
       FROM customers c WHERE c.org_id = $1`,
    [orgId],
  );
  await db.query(
    `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type, included_units)
     SELECT $1, s.id, p.id, CASE WHEN p.pricing_type = 'usage' THEN 0 ELSE 5 END, p.unit_price,
            CASE WHEN p.pricing_type = 'usage' THEN 'metered' ELSE 'licensed' END, 0
       FROM subscriptions s CROSS JOIN products p WHERE s.org_id = $1 AND p.org_id = $1`,
    [orgId],
  );
  const { rows: customerRows } = await db.query<{ id: number; subscription_id: number }>(
    `SELECT c.id, s.id AS subscription_id FROM customers c JOIN subscriptions s ON s.customer_id = c.id
      WHERE c.org_id = $1 ORDER BY c.id LIMIT 1`,
    [orgId],
  );
  const customer = customerRows[0]!;
  // 24 monthly invoices for the customer, 20 for each of 100 others (2,000), 3 lines each
  await db.query(
    `WITH subs AS (SELECT s.id, s.customer_id, (s.customer_id = $2) AS mine FROM subscriptions s WHERE s.org_id = $1),
          periods AS (
            SELECT s.id AS subscription_id, s.customer_id, k,
                   ('2024-11-01'::date + make_interval(months => k))::date AS d
              FROM subs s CROSS JOIN LATERAL generate_series(0, CASE WHEN s.mine THEN 23 ELSE 19 END) k)
     INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start, period_end,
       due_date, status, subtotal, tax_amount, total, amount_paid, currency, created_at, updated_at)
     SELECT $1, 'INV-' || lpad(row_number() OVER (ORDER BY d, customer_id)::text, 6, '0'), customer_id, subscription_id,
            (d + interval '1 month')::date, d, (d + interval '1 month' - interval '1 day')::date,
            (d + interval '1 month' + interval '30 days')::date,
            CASE WHEN k < 21 THEN 'PAID' WHEN k = 21 THEN 'PARTIALLY_PAID' ELSE 'POSTED' END,
            300, 44.925, 344.925, CASE WHEN k < 21 THEN 344.925 WHEN k = 21 THEN 100 ELSE 0 END, 'CAD',
            d + interval '1 month', d + interval '1 month'
       FROM periods`,
    [orgId, customer.id],
  );
  await db.query(
    `INSERT INTO invoice_items (org_id, invoice_id, position, product_id, description, quantity, unit_price,
       line_total_pre_tax, tax_amount, tax_type)
     SELECT $1, i.id, p.n, p.id, p.name || ' for the period', 100, 1, 100, 14.975, 'GST_QST'
       FROM invoices i CROSS JOIN LATERAL (
         SELECT id, name, row_number() OVER (ORDER BY id) AS n FROM products WHERE org_id = $1) p
      WHERE i.org_id = $1`,
    [orgId],
  );

  const { rows: items } = await db.query<{ id: number; name: string }>(
    `SELECT si.id, p.name FROM subscription_items si JOIN products p ON p.id = si.product_id
      WHERE si.subscription_id = $1 AND si.usage_type = 'metered' ORDER BY si.id`,
    [customer.subscription_id],
  );
  // real usage events over the subscription's current period (31 days), written as the pg-sink
  // writes them (daily totals included): the page reads them through the usage read-back
  const { rows: periods } = await db.query<{ start: Date }>(
    'SELECT current_period_start AS start FROM subscriptions WHERE id = $1',
    [customer.subscription_id],
  );
  const periodStart = periods[0]!.start.getTime();
  const sink = new PostgresUsageSink(db);
  for (const item of items) {
    await sink.write(
      Array.from({ length: 31 }, (_, i) => ({
        id: randomUUID(),
        orgId,
        subscriptionItemId: item.id,
        idempotencyKey: `bench-${item.id}-${i}`,
        quantity: `${1000 + ((i * 37) % 11) * 100}`,
        occurredAtMs: periodStart + i * 86_400_000 + 3_600_000,
        recordedAtMs: Date.now(),
      })),
    );
  }

  const ingest = await openUsageIngest(platform);
  const app = await buildApiApp(apiDepsFrom(config, platform, ingest));
  await app.ready();
  const session = await createPortalSession(
    db,
    orgId,
    { customer_id: customer.id, locale: 'fr-CA', expires_in: 86_400 },
    { baseUrl: 'http://127.0.0.1' },
  );
  const path = new URL(session.url).pathname;

  // --- server-side render time ---
  const page = await app.inject({ method: 'GET', url: path });
  if (page.statusCode !== 200) throw new Error(`portal page: ${page.statusCode}`);
  const bars = (page.body.match(/<rect class="bar"/g) ?? []).length;
  const invoiceRows = (page.body.match(/aria-label="Voir la facture/g) ?? []).length;
  log(`warming up, then ${RENDERS} renders (${invoiceRows} invoices, ${bars} chart bars on the page)`);
  for (let i = 0; i < 100; i++) await app.inject({ method: 'GET', url: path });
  const busy = await waitForQuietMachine(0.25, 120_000);
  log(`machine ${(busy * 100).toFixed(0)}% busy when the renders started`);
  const postgresBefore = await commandCpuSeconds('postgres');
  const cpuBefore = process.cpuUsage();
  const times: number[] = [];
  for (let i = 0; i < RENDERS; i++) {
    const start = performance.now();
    const response = await app.inject({ method: 'GET', url: path });
    times.push(performance.now() - start);
    if (response.statusCode !== 200) throw new Error(`render ${i}: ${response.statusCode}`);
  }
  const cpu = process.cpuUsage(cpuBefore);
  const postgresCpu = (await commandCpuSeconds('postgres')) - postgresBefore;
  times.sort((a, b) => a - b);
  const render = {
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    max: times.at(-1)!,
    // CPU per render reads apart from waiting on a busy machine
    cpuMs: (cpu.user + cpu.system) / 1000 / RENDERS,
    // every Postgres backend on the machine: other work on a shared machine counts here too
    postgresCpuMs: (postgresCpu * 1000) / RENDERS,
    machineBusy: busy,
  };

  // --- weight: the page and everything it loads, PDFs aside ---
  const assets = [...page.body.matchAll(/<link rel="(?:stylesheet|icon)" href="([^"]+)"/g)].map(
    (m) => new URL(m[1]!).pathname,
  );
  const loaded = [
    page.rawPayload,
    ...(await Promise.all(assets.map(async (asset) => (await app.inject({ url: asset })).rawPayload))),
  ];
  const weight = loaded.reduce((sum, bytes) => sum + bytes.length, 0);
  const gzipped = loaded.reduce((sum, bytes) => sum + gzipSync(bytes).length, 0);

  // --- autocannon against the listening server, beside /healthz ---
  const origin = await app.listen({ host: '127.0.0.1', port: 0 });
  // autocannon in a process of its own: the server under test has this process's event loop
  const cannon = async (target: string) => {
    const args = ['-j', '-c', String(CONNECTIONS), '-d', String(DURATION), target];
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [`${ROOT}/node_modules/autocannon/autocannon.js`, ...args],
      {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return JSON.parse(stdout) as {
      requests: { average: number };
      latency: { p50: number; p99: number };
      non2xx: number;
    };
  };
  log(`autocannon: ${CONNECTIONS} connections, ${DURATION} s each`);
  const baseline = await cannon(`${origin}/healthz`);
  const portal = await cannon(`${origin}${path}`);

  // --- PDF per document (an invoice of the customer, in French) ---
  const { rows: last } = await db.query<{ id: string }>(
    'SELECT id FROM invoices WHERE customer_id = $1 ORDER BY invoice_date DESC LIMIT 1',
    [customer.id],
  );
  const printable = await loadPrintableInvoice(db, orgId, last[0]!.id, { locale: 'fr-CA' });
  const wide = { ...printable, customer: { ...printable.customer, name: 'Ελένη Παπαδοπούλου / Москва' } };
  const pdfTimes = async (document: typeof printable) => {
    for (let i = 0; i < 20; i++) await renderInvoicePdf(document);
    const each: number[] = [];
    for (let i = 0; i < 200; i++) {
      const start = performance.now();
      await renderInvoicePdf(document);
      each.push(performance.now() - start);
    }
    each.sort((a, b) => a - b);
    return { mean: each.reduce((a, b) => a + b, 0) / each.length, p99: percentile(each, 99) };
  };
  const pdfHelvetica = await pdfTimes(printable);
  const pdfDejaVu = await pdfTimes(wide);
  const pdfCjk = await pdfTimes({
    ...printable,
    customer: { ...printable.customer, name: '株式会社 山田商事' },
  });

  await app.close();
  await ingest.close();
  await platform.close();

  const ms = (value: number) => value.toFixed(2);
  console.log('\nPortal page, server-side (Fastify inject: no network)');
  printTable(
    ['invoices', 'chart bars', 'renders', 'p50 ms', 'p99 ms', 'max ms', 'CPU ms/render'],
    [[invoiceRows, bars, RENDERS, ms(render.p50), ms(render.p99), ms(render.max), ms(render.cpuMs)]],
  );
  console.log('\nWeight: the page and what it loads (stylesheet, icon), PDFs aside');
  printTable(
    ['files', 'bytes', 'KB', 'gzip bytes'],
    [[loaded.length, weight, (weight / 1024).toFixed(1), gzipped]],
  );
  console.log(`\nOver HTTP (autocannon, ${CONNECTIONS} connections, ${DURATION} s)`);
  printTable(
    ['route', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx'],
    [
      [
        'GET /healthz (baseline)',
        baseline.requests.average,
        baseline.latency.p50,
        baseline.latency.p99,
        baseline.non2xx,
      ],
      ['GET /portal/{token}', portal.requests.average, portal.latency.p50, portal.latency.p99, portal.non2xx],
    ],
  );
  console.log(
    `portal/baseline throughput: ${(portal.requests.average / baseline.requests.average).toFixed(3)}`,
  );
  console.log('\nPDF rendering per document (200 documents after 20 to warm up)');
  printTable(
    ['fonts', 'mean ms', 'p99 ms'],
    [
      ['Helvetica (WinAnsi text)', ms(pdfHelvetica.mean), ms(pdfHelvetica.p99)],
      ['DejaVu Sans (Greek, Cyrillic)', ms(pdfDejaVu.mean), ms(pdfDejaVu.p99)],
      ['Helvetica + Noto Sans SC (Chinese)', ms(pdfCjk.mean), ms(pdfCjk.p99)],
    ],
  );
  console.log('');
  printBars([
    {
      bar: `server-side render p99 <= ${P99_BAR_MS} ms`,
      measured: `${ms(render.p99)} ms`,
      pass: render.p99 <= P99_BAR_MS,
    },
    {
      bar: 'page weight < 100 KB (PDFs aside)',
      measured: `${(weight / 1024).toFixed(1)} KB`,
      pass: weight < WEIGHT_BAR_BYTES,
    },
    {
      bar: 'every portal request answered 2xx',
      measured: `${portal.non2xx} non-2xx`,
      pass: portal.non2xx === 0,
    },
  ]);
  const report = await writeReport('portal', {
    renders: RENDERS,
    invoices: invoiceRows,
    chartBars: bars,
    renderMs: render,
    weightBytes: weight,
    gzipBytes: gzipped,
    http: { baseline, portal },
    pdfMs: { helvetica: pdfHelvetica, dejaVu: pdfDejaVu, cjk: pdfCjk },
  });
  log(`report: ${report}`);
} finally {
  await dropDatabase(dbName, log);
}
