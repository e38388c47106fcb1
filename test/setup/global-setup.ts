import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { Database, migrate } from '../../libs/db/index.js';
import { type KafkaTestBroker, startKafkaTestBroker } from '../helpers/kafka-test-broker.js';
import type { TestServices } from './services.js';

/**
 * Runs once per `vitest run`, after deploy/dev-services/ensure-test-services.sh made the services
 * available: checks each one, starts this run's Kafka test broker, and builds the migrated
 * template database. Databases of earlier runs that died without cleaning up are dropped.
 */
export default async function setup(project: TestProject) {
  const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const clickhouseUrl = process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:8123';
  const runPrefix = `bt_${process.pid}_`;

  await check('Postgres', databaseUrl, () => withAdmin(databaseUrl, (c) => c.query('SELECT 1')));
  await check('Redis', redisUrl, () => redisPing(redisUrl));
  await check('ClickHouse', clickhouseUrl, async () => {
    const response = await fetch(new URL('/ping', clickhouseUrl));
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
  });

  await dropStaleDatabases(databaseUrl, clickhouseUrl);
  const templateDatabase = `${runPrefix}template`;
  await withAdmin(databaseUrl, (c) => c.query(`CREATE DATABASE "${templateDatabase}"`));
  const template = new Database(databaseUrlFor(databaseUrl, templateDatabase), { poolSize: 1 });
  try {
    await migrate(template);
  } finally {
    await template.close();
  }

  let broker: KafkaTestBroker | undefined;
  let kafkaBrokers = process.env.KAFKA_BROKERS?.split(',').map((b) => b.trim());
  if (!kafkaBrokers) {
    broker = await startKafkaTestBroker();
    kafkaBrokers = broker.brokers;
  }

  const runLogFile = path.join(tmpdir(), `${runPrefix}run.log`);
  const runSecretsFile = path.join(tmpdir(), `${runPrefix}secrets.txt`);
  await writeFile(runLogFile, '');
  await writeFile(runSecretsFile, '');

  const services: TestServices = {
    databaseUrl,
    templateDatabase,
    runPrefix,
    redisUrl,
    clickhouseUrl,
    kafkaBrokers,
    runLogFile,
    runSecretsFile,
  };
  project.provide('services', services);

  return async () => {
    await broker?.stop();
    await dropRunDatabases(databaseUrl, clickhouseUrl, runPrefix);
    await assertNoCredentialsLogged(runLogFile, runSecretsFile);
  };
}

/**
 * The log-secrets check of the whole run: no key or signing secret that any test created or
 * received, and no Authorization header, appears in any log line written by the run.
 */
async function assertNoCredentialsLogged(runLogFile: string, runSecretsFile: string): Promise<void> {
  const log = await readFile(runLogFile, 'utf8');
  const secrets = [...new Set((await readFile(runSecretsFile, 'utf8')).split('\n').filter(Boolean))];
  const leaked = secrets.filter((secret) => log.includes(secret) || log.includes(secret.slice(0, 20)));
  const bearer = /Bearer\s+\S+/i.test(log);
  const lines = log.split('\n').length - 1;
  if (leaked.length || bearer) {
    throw new Error(
      `credentials found in the run's log ${runLogFile}: ${leaked.length} of ${secrets.length} known keys/secrets` +
        (bearer ? ', and a Bearer token' : ''),
    );
  }
  console.log(
    `[log-secrets] ${lines} log lines checked against ${secrets.length} keys and signing secrets: none found`,
  );
  await rm(runLogFile, { force: true });
  await rm(runSecretsFile, { force: true });
}

async function dropRunDatabases(
  databaseUrl: string,
  clickhouseUrl: string,
  runPrefix: string,
): Promise<void> {
  await withAdmin(databaseUrl, async (c) => {
    const { rows } = await c.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datname LIKE $1',
      [`${runPrefix}%`],
    );
    for (const { datname } of rows) await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  });
  await clickhouseQuery(clickhouseUrl, 'SHOW DATABASES').then(async (text) => {
    for (const name of text.split('\n').filter((n) => n.startsWith(runPrefix))) {
      await clickhouseQuery(clickhouseUrl, `DROP DATABASE IF EXISTS ${name}`);
    }
  });
}

async function check(name: string, url: string, probe: () => Promise<unknown>): Promise<void> {
  try {
    await probe();
  } catch (error) {
    throw new Error(
      `${name} is not reachable at ${redact(url)} (${(error as Error).message}). ` +
        'Run `npm test` (it starts local services), or set the URL env var to a running one.',
    );
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@');
}

export function databaseUrlFor(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function withAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Databases named bt_<pid>_* whose run (pid) is gone were left behind by a killed run. */
async function dropStaleDatabases(databaseUrl: string, clickhouseUrl: string): Promise<void> {
  const stale = (name: string) => {
    const pid = Number(/^bt_(\d+)_/.exec(name)?.[1]);
    if (!pid) return false;
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  };
  await withAdmin(databaseUrl, async (c) => {
    const { rows } = await c.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'bt\\_%'",
    );
    for (const { datname } of rows.filter((r) => stale(r.datname))) {
      await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  });
  const databases = await clickhouseQuery(clickhouseUrl, 'SHOW DATABASES');
  for (const name of databases.split('\n').filter(stale)) {
    await clickhouseQuery(clickhouseUrl, `DROP DATABASE IF EXISTS ${name}`);
  }
}

async function clickhouseQuery(url: string, sql: string): Promise<string> {
  const response = await fetch(url, { method: 'POST', body: sql });
  const text = await response.text();
  if (!response.ok) throw new Error(`ClickHouse: ${text}`);
  return text.trim();
}

async function redisPing(url: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000 });
  try {
    await redis.connect();
    await redis.ping();
  } finally {
    redis.disconnect();
  }
}
