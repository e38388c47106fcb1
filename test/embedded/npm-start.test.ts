import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, runTs, startTs } from '../helpers/processes.js';

/**
 * `npm start` on the embedded defaults: no DATABASE_URL, REDIS_URL, KAFKA_BROKERS or
 * CLICKHOUSE_URL. It must migrate, seed, print a working key, answer /meta, and let the console
 * (another process) reach its database through the socket.
 */
describe('npm start (embedded mode)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('prints a working key, answers /meta, and serves the console while running', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-embedded-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const env = {
      DATA_DIR: dataDir,
      PORT: String(freePort()),
      INGEST_PORT: String(freePort()),
      EMBEDDED_DB_PORT: String(freePort()),
      DATABASE_URL: '',
      REDIS_URL: '',
      KAFKA_BROKERS: '',
      CLICKHOUSE_URL: '',
      LOG_LEVEL: 'warn',
    };
    const started = Date.now();
    const server = await startTs('bin/start-embedded.ts', env, /API key:\s+(sk_test_\S+)/, 60_000);
    cleanups.push(() => server.stop());
    const apiKey = server.match[1]!;
    expect(server.output()).toContain(`base URL: http://127.0.0.1:${env.PORT}/api/public/v1`);

    const base = `http://127.0.0.1:${env.PORT}/api/public/v1`;
    const meta = await fetch(`${base}/meta`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(meta.status).toBe(200);
    const body = (await meta.json()) as { data: { organization: { plan: string } } };
    expect(body.data.organization.plan).toBe('beta');
    expect(Date.now() - started).toBeLessThan(30_000);

    // the console joins the running embedded database through its socket
    const created = await runTs(
      'bin/console.ts',
      ['key', 'create', '--org', '1', '--name', 'from-console'],
      env,
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout).api_key;
    const withNewKey = await fetch(`${base}/openapi.json`, { headers: { authorization: `Bearer ${key}` } });
    expect(withNewKey.status).toBe(200);

    // ...but never with another DATA_DIR: that would write a database the operator did not name
    const otherDir = await mkdtemp(path.join(tmpdir(), 'billing-embedded-other-'));
    cleanups.push(() => rm(otherDir, { recursive: true, force: true }));
    const elsewhere = await runTs('bin/console.ts', ['org', 'create', '--name', 'Wrong Dir'], {
      ...env,
      DATA_DIR: otherDir,
    });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain(`not by the embedded database of DATA_DIR ${otherDir}`);

    // a restart prints the same demo key again
    expect(await server.stop()).toBe(0);
    const again = await startTs('bin/start-embedded.ts', env, /API key:\s+(sk_test_\S+)/, 60_000);
    cleanups.push(() => again.stop());
    expect(again.match[1]).toBe(apiKey);
  });
});
