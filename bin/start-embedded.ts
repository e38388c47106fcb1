/**
 * `npm start`: the whole service in ONE process on the embedded defaults (docs/architecture.md, "Two modes"). It composes
 * the services' own start functions; services never import each other, this launcher does.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startBillingScheduler } from '../libs/billing/index.js';
import {
  embeddedSettings,
  loadConfigOrExit,
  reaching,
  startOrExit,
  stopOnSignals,
} from '../libs/config/index.js';
import { migrate } from '../libs/db/index.js';
import {
  afterCreditsMoved,
  alertPolicy,
  draftPolicy,
  topUpPolicy,
  UsageGuardrails,
} from '../libs/guardrails/index.js';
import { openPlatform, type Platform } from '../libs/platform/index.js';
import { BASE_PATH } from '../libs/schemas/index.js';
import { seedDemo } from '../libs/seed/index.js';
import { apiDepsFrom, buildApiApp } from '../services/api/app.js';
import { buildDispatcher } from '../services/dispatcher/dispatcher.js';
import { startIngest } from '../services/ingest/start.js';

const config = loadConfigOrExit(embeddedSettings);
const credentialsFile = path.resolve(config.DATA_DIR, 'demo-credentials.json');

const { platform, ingest, api, demo, guardrails } = await startOrExit('the billing service', async () => {
  const platform = await openPlatform(config, 'embedded');
  const migrating = migrate(platform.db);
  const applied = await (config.DATABASE_URL ? reaching('DATABASE_URL', migrating) : migrating);
  if (applied.length) platform.log.info({ applied }, 'migrations applied');
  const demo = await demoCredentials(platform);

  // Usage ingest: the ingest server on INGEST_PORT (Node's HTTP server unless INGEST_TRUSTED_PROXY) and the api's usage routes share one core, whose
  // in-process log writes to Postgres (and ClickHouse when CLICKHOUSE_URL is set).
  // Policies on counted usage (automatic top-ups) ride the in-process log (docs/decisions.md).
  const guardrails = new UsageGuardrails({
    db: platform.db,
    log: platform.log.child({ component: 'guardrails' }),
    policies: [topUpPolicy(platform.db), alertPolicy(platform.db), draftPolicy(platform.db)],
  });
  const ingest = await startIngest({
    platform,
    usageListeners: [guardrails.sink('queued')],
    host: config.HOST,
    port: config.INGEST_PORT,
    bodyLimit: config.INGEST_BODY_LIMIT_BYTES,
    trustedProxy: config.INGEST_TRUSTED_PROXY,
    allowFallbackServer: config.INGEST_ALLOW_FALLBACK_SERVER,
  });

  const api = await buildApiApp(
    apiDepsFrom(config, platform, {
      ingest: ingest.usage,
      readStores: ingest.pipeline.readStores,
      checks: ingest.pipeline.checks,
    }),
  );
  await api.listen({ host: config.HOST, port: config.PORT });
  guardrails.attach(ingest.pipeline.readStores);
  return { platform, ingest, api, demo, guardrails };
});
const { db, log } = platform;

// Webhooks: the dispatcher shares this process's pool; /healthz and /metrics are the api's.
const dispatcher = buildDispatcher({ db, log: log.child({ component: 'dispatcher' }), config });
dispatcher.start();

// Billing runs: once shortly after start, then every BILLING_INTERVAL_SECONDS (a deployment
// schedules `console billing run` instead). A failed run is logged; the next one still happens.
const billing = startBillingScheduler({
  db,
  config,
  stores: ingest.pipeline.readStores,
  afterCustomersMoved: (customers) => afterCreditsMoved(db, ingest.pipeline.readStores, customers),
  intervalSeconds: config.BILLING_INTERVAL_SECONDS,
  log: log.child({ component: 'billing' }),
});

const origin = config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.PORT}`;
process.stdout.write(
  [
    '',
    `Billing service running (embedded mode, data in ${path.resolve(config.DATA_DIR)})`,
    `  base URL: ${origin}${BASE_PATH}`,
    `  ingest:   http://${config.HOST}:${ingest.server.port}${BASE_PATH}/usage/events (usage only)`,
    `  API key:  ${demo.api_key}   (organization ${demo.id}, "${demo.name}")`,
    `  try:      curl -H "Authorization: Bearer ${demo.api_key}" ${origin}${BASE_PATH}/meta`,
    '',
  ].join('\n'),
);

/**
 * First start: seed one demo organization and keep its key in DATA_DIR (mode 0600) so later
 * starts can print it again. Only the embedded mode does this; the database keeps hashes only.
 */
async function demoCredentials({
  db,
  log,
}: Platform): Promise<{ id: number; name: string; api_key: string }> {
  const existing = await readFile(credentialsFile, 'utf8').then(JSON.parse, () => undefined);
  if (existing?.api_key) return existing;
  const [org] = await seedDemo(db, { config, log, orgs: 1, progress: (message) => log.info(message) });
  // Joining another start's database (its EMBEDDED_DB_PORT), this start has not made DATA_DIR.
  await mkdir(path.dirname(credentialsFile), { recursive: true });
  await writeFile(credentialsFile, JSON.stringify(org, null, 2), { mode: 0o600 });
  await chmod(credentialsFile, 0o600);
  return org!;
}

stopOnSignals({
  timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  log,
  async stop() {
    await ingest.server.close();
    await api.close();
    await api.requestsFinished();
    await ingest.pipeline.close();
    await guardrails.stop();
    await dispatcher.stop();
    await billing.stop();
    await platform.close();
  },
});
