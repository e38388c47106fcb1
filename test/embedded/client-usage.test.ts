import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createBillingClient, type UsageRejection, UsageReporter } from '@billing-service/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../libs/db/index.js';
import {
  assertClientBuilt,
  type Exchange,
  expectExactlyOnce,
  recordingFetch,
  reportStream,
  TEST_REPORTER_SETTINGS,
} from '../client/support.js';
import { freePort, PROJECT_ROOT, runCommand, type ServiceProcess, startTs } from '../helpers/processes.js';

const READY = /API key:\s+(sk_test_\S+)/;

/**
 * The client against `npm start` (one process, PGlite, in-process log, in-memory dedup store):
 * the typed API client finds the demo's items, and the UsageReporter sends events to the ingest
 * port while the process is restarted (SIGTERM) and killed (SIGKILL) and started again. Every
 * event reported is stored once in the embedded database or handed to onRejected, although the
 * in-memory dedup store forgets every key at each start (Postgres' unique key answers repeats).
 */
describe('the client against npm start (embedded mode)', { timeout: 180_000 }, () => {
  let dataDir: string;
  let env: Record<string, string>;
  let server: ServiceProcess;
  let apiKey: string;
  let metered: number;
  let licensed: number;
  let orgId: number;

  const start = async () => {
    server = await startTs('bin/start-embedded.ts', env, READY, 90_000);
    apiKey = server.match[1]!;
  };

  beforeAll(async () => {
    await assertClientBuilt();
    dataDir = await mkdtemp(path.join(tmpdir(), 'billing-client-'));
    env = {
      DATA_DIR: dataDir,
      PORT: String(freePort()),
      INGEST_PORT: String(freePort()),
      EMBEDDED_DB_PORT: String(freePort()),
      DATABASE_URL: '',
      REDIS_URL: '',
      KAFKA_BROKERS: '',
      CLICKHOUSE_URL: '',
      LOG_LEVEL: 'warn',
      SHUTDOWN_TIMEOUT_MS: '10000',
    };
    await start();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** A query on the embedded database, on a connection of its own that is closed at once. */
  const embeddedDb: Queryable = {
    async query(text: string, values?: unknown[]) {
      const client = new pg.Client({
        connectionString: `postgres://postgres@127.0.0.1:${env.EMBEDDED_DB_PORT}/postgres`,
      });
      await client.connect();
      try {
        return await client.query(text, values);
      } finally {
        await client.end();
      }
    },
  } as Queryable;

  it('finds the demo organization’s items through the typed API client', async () => {
    const billing = createBillingClient({ baseUrl: `http://127.0.0.1:${env.PORT}/api/public/v1`, apiKey });
    const { data } = await billing.GET('/subscriptions', {
      params: { query: { status: 'active', limit: 100 } },
    });
    const items = data.data.flatMap((subscription) => subscription.items);
    metered = items.find((item) => item.usage_type === 'metered')!.id;
    licensed = items.find((item) => item.usage_type === 'licensed')!.id;
    expect(metered).toBeGreaterThan(0);
    expect(licensed).toBeGreaterThan(0);
    const { rows } = await embeddedDb.query<{ org_id: number }>(
      'SELECT org_id FROM subscription_items WHERE id = $1',
      [metered],
    );
    orgId = Number(rows[0]!.org_id);
  });

  it("runs the README's quick start: 10,000 events reported, none unsent, each stored once", async () => {
    const readme = await readFile(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
    const block = /client-usage\.test\.ts runs this block[^\n]*\n```js\n([\s\S]*?)\n```/.exec(readme)?.[1];
    if (!block) throw new Error('README.md has no client block under the client-usage.test.ts marker');
    // inside the project, so that its import of the client resolves (to clients/node/dist)
    const directory = path.join(PROJECT_ROOT, '.cache', `readme-client-${process.pid}`);
    await mkdir(directory, { recursive: true });
    const file = path.join(directory, 'quick-start.mjs');
    // the README names npm start's default ports; this one runs on ports of its own
    await writeFile(
      file,
      block
        .replaceAll('http://127.0.0.1:8080/', `http://127.0.0.1:${env.PORT}/`)
        .replaceAll('http://127.0.0.1:8081/', `http://127.0.0.1:${env.INGEST_PORT}/`),
    );
    const before = await storedFor(metered);
    try {
      const run = await runCommand(process.execPath, [file], { BILLING_API_KEY: apiKey }, 60_000);
      expect(run.stderr).toBe('');
      expect(run.stdout.trim()).toBe('reported 10000 events, 0 unsent');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
    const after = await storedFor(metered);
    expect(after.rows - before.rows).toBe(10_000);
    expect(after.keys - before.keys).toBe(10_000);
  });

  /** Rows of an item in the embedded database, and their distinct keys. */
  async function storedFor(item: number): Promise<{ rows: number; keys: number }> {
    const { rows } = await embeddedDb.query<{ rows: number; keys: number }>(
      'SELECT count(*)::int AS rows, count(DISTINCT idempotency_key)::int AS keys FROM usage_events WHERE subscription_item_id = $1',
      [item],
    );
    return rows[0]!;
  }

  for (const [name, stop] of [
    ['restarted (SIGTERM)', async () => expect(await server.stop()).toBe(0)],
    ['killed (SIGKILL)', () => server.kill()],
  ] as const) {
    it(`counts every event once when the process is ${name} mid-stream and started again`, async () => {
      const rejections: UsageRejection[] = [];
      const exchanges: Exchange[] = [];
      const reporter = new UsageReporter({
        baseUrl: `http://127.0.0.1:${env.INGEST_PORT}/api/public/v1`,
        apiKey,
        ...TEST_REPORTER_SETTINGS,
        maxBatchEvents: 250,
        onRejected: (rejection) => rejections.push(rejection),
        fetch: recordingFetch(exchanges),
      });
      const reported = await reportStream(reporter, {
        label: `embedded-${name.split(' ')[0]}-${Date.now()}`,
        metered,
        refusedItem: licensed,
        total: 4000,
        perTick: 100,
        tickMs: 20,
        fault: async () => {
          await stop();
          await sleep(500);
          await start();
        },
      });
      const { unsent } = await reporter.close({ timeoutMs: 60_000 });
      expect(unsent).toEqual([]);
      expect(exchanges.some((e) => e.status === 0 || e.status === 503)).toBe(true);
      expect(reporter.stats.retried).toBeGreaterThan(0);
      await expectExactlyOnce(embeddedDb, orgId, metered, reported, rejections, 30_000);
    });
  }
});
