import { rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkReadiness, clickhouseCheck } from '../../libs/observability/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runTs, type ServiceProcess, startTs } from '../helpers/processes.js';
import { testServices } from '../helpers/services.js';

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('ClickHouse readiness with credentials in CLICKHOUSE_URL', () => {
  it('is ready when ClickHouse answers, and never shows the password', async () => {
    const url = new URL(testServices().clickhouseUrl);
    url.username = url.username || 'default';
    const ready = await checkReadiness([clickhouseCheck(url.toString())]);
    expect(ready.checks.clickhouse).toMatchObject({ status: 'ok' });

    const down = await checkReadiness([
      clickhouseCheck(`http://default:hunter2-secret@127.0.0.1:${await closedPort()}`),
    ]);
    expect(down.checks.clickhouse).toMatchObject({ status: 'down' });
    expect(JSON.stringify(down)).not.toContain('hunter2-secret');
  });
});

describe('a service whose DATABASE_URL cannot be reached', { timeout: 60_000 }, () => {
  const services: [string, Record<string, string>][] = [
    ['services/api/main.ts', { PORT: '0' }],
    ['services/ingest/main.ts', { INGEST_PORT: '0' }],
    ['services/dispatcher/main.ts', { DISPATCHER_PORT: '0' }],
    ['services/ingest/sinks.ts', { SINKS_PORT: '0', KAFKA_BROKERS: '127.0.0.1:1' }],
  ];
  it.each(services)('%s stops at start-up naming DATABASE_URL, without the password', async (entry, env) => {
    const result = await runTs(
      entry,
      [],
      {
        ...env,
        APP_ENV: 'test',
        DATABASE_URL: `postgres://billing:hunter2-secret@127.0.0.1:${await closedPort()}/billing`,
        REDIS_URL: undefined,
        CLICKHOUSE_URL: undefined,
        ...(env.KAFKA_BROKERS ? {} : { KAFKA_BROKERS: undefined }),
      },
      25_000,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cannot reach DATABASE_URL: .*ECONNREFUSED/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr + result.stdout).not.toContain('hunter2-secret');
  });
});

describe('a stop signal while a service starts', () => {
  const start = (startMs = 600) =>
    startTs('test/operations/entries/slow-start.ts', { START_MS: String(startMs) }, /starting/);

  it('is held until the start-up ends, then stops the service cleanly (exit 0)', async () => {
    const service = await start();
    expect(await service.stop()).toBe(0);
    expect(service.output()).toMatch(/starting\nstarted\n(.|\n)*stopping on SIGTERM\n(.|\n)*shut down/);
  });

  it('a second signal does not wait for the start-up: exit 1 at once', async () => {
    // a start-up far longer than a loaded machine takes to end a process: waiting for it shows
    const service = await start(10_000);
    service.child.kill('SIGINT');
    await sleep(50);
    const stopping = performance.now();
    expect(await service.stop()).toBe(1);
    expect(performance.now() - stopping).toBeLessThan(5000);
    expect(service.output()).not.toContain('started');
  });
});

describe('npm start on SIGTERM', { timeout: 90_000 }, () => {
  let database: TestDatabase;
  let started: ServiceProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase('ops_sigterm');
  });
  afterAll(async () => {
    await started?.kill();
    if (database) await rm(dataDir(), { recursive: true, force: true });
    await database?.drop();
  });
  const dataDir = () => path.join('/tmp', `${database.name}-data`);

  it('exits 0 within SHUTDOWN_TIMEOUT_MS while a client keeps an idle connection to ingest', async () => {
    started = await startTs(
      'bin/start-embedded.ts',
      {
        APP_ENV: 'test',
        LOG_LEVEL: 'warn',
        DATABASE_URL: database.url,
        DATABASE_POOL_SIZE: '4',
        REDIS_URL: undefined,
        KAFKA_BROKERS: undefined,
        CLICKHOUSE_URL: undefined,
        PORT: '0',
        INGEST_PORT: '0',
        DATA_DIR: dataDir(),
        SHUTDOWN_TIMEOUT_MS: '3000',
      },
      /ingest: +http:\/\/[\d.]+:(\d+)\//,
      80_000,
    );
    const ingestPort = Number(started.match[1]);
    const agent = new http.Agent({ keepAlive: true });
    const status = await new Promise<number>((resolve, reject) => {
      http
        .get(`http://127.0.0.1:${ingestPort}/healthz`, { agent }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        })
        .on('error', reject);
    });
    expect(status).toBe(200);

    const stopping = performance.now();
    const code = await started.stop();
    const tookMs = performance.now() - stopping;
    agent.destroy();
    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(3000);
  });
});
