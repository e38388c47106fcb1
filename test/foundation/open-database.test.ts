import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, type OpenedDatabase, openDatabase } from '../../libs/db/index.js';
import { DependencyUnavailableError } from '../../libs/dependency-guard/index.js';
import { createTestDatabase, type DatabaseRelay, relayTo, type TestDatabase } from '../helpers/database.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices } from '../helpers/services.js';

const settings = {
  DATABASE_POOL_SIZE: 3,
  DATABASE_QUERY_TIMEOUT_MS: 300,
  DATABASE_STALL_MS: 10_000,
  DATA_DIR: '/nonexistent',
  EMBEDDED_DB_PORT: 1,
};

/** The backend pids `db` answers from when `count` statements run at once. */
async function backendsAtOnce(db: Database, count: number): Promise<Set<number>> {
  const answers = await Promise.all(
    Array.from({ length: count }, () =>
      db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.05)'),
    ),
  );
  return new Set(answers.map((result) => result.rows[0]!.pid));
}

describe('openDatabase with DATABASE_URL', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('open-database');
  });
  afterAll(() => database.drop());

  const applicationName = (db: Database) =>
    db
      .query<{ name: string }>("SELECT current_setting('application_name') AS name")
      .then((r) => r.rows[0]!.name);

  it('opens Postgres with the pool size, name, prepared statements and query timeout of its settings', async () => {
    const opened = await openDatabase({ ...settings, DATABASE_URL: database.url }, 'billing-open-test');
    try {
      expect(opened.mode).toBe('postgres');
      expect(opened.direct).toBeUndefined();
      expect((await backendsAtOnce(opened.db, 5)).size).toBe(3);
      expect(await applicationName(opened.db)).toBe('billing-open-test');
      // a parameterized text runs as a named statement, prepared once on its connection
      const text = 'SELECT $1::int AS n';
      const prepared = await opened.db.transaction(async (tx) => {
        await tx.query(text, [1]);
        return (
          await tx.query<{ count: number }>(
            'SELECT count(*)::int AS count FROM pg_prepared_statements WHERE statement = $1',
            [text],
          )
        ).rows;
      });
      expect(prepared).toEqual([{ count: 1 }]);
      await expect(opened.db.query('SELECT pg_sleep(2)')).rejects.toThrow('Query read timeout');
    } finally {
      await opened.close();
    }
    await expect(opened.db.query('SELECT 1')).rejects.toThrow();
  });

  /** Runs a long statement through `opened` and has the server end its connection. */
  async function cutOff(opened: OpenedDatabase): Promise<unknown> {
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const sleeping = opened.db.query('SELECT pg_sleep(30)').then(
        () => undefined,
        (error: unknown) => error,
      );
      let pid: number | undefined;
      for (let i = 0; i < 200 && pid === undefined; i++) {
        const { rows } = await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT pg_sleep(30)'",
        );
        pid = rows[0]?.pid;
        if (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      return await sleeping;
    } finally {
      await admin.end();
    }
  }

  it('guards the pool against an outage when given a log, and only then', async () => {
    const guarded = await openDatabase(
      { ...settings, DATABASE_QUERY_TIMEOUT_MS: 60_000, DATABASE_URL: database.url },
      'billing-guarded',
      runLogger(),
    );
    try {
      expect(await cutOff(guarded)).toBeInstanceOf(DependencyUnavailableError);
    } finally {
      await guarded.close();
    }
    const plain = await openDatabase(
      { ...settings, DATABASE_QUERY_TIMEOUT_MS: 60_000, DATABASE_URL: database.url },
      'billing-plain',
    );
    try {
      const error = await cutOff(plain);
      expect(error).not.toBeInstanceOf(DependencyUnavailableError);
      expect(error).toMatchObject({ code: '57P01' });
    } finally {
      await plain.close();
    }
  });
});

describe('openDatabase without DATABASE_URL, when another process serves the embedded database', () => {
  // Postgres itself, behind a port of the test's own, plays the embedded database that another
  // process serves; the lock file in DATA_DIR names that process (this one) and that port.
  let relay: DatabaseRelay;
  let port: number;
  let dataDir: string;
  beforeAll(async () => {
    relay = await relayTo(testServices().databaseUrl);
    port = relay.port;
    dataDir = await mkdtemp(path.join(tmpdir(), 'open-database-'));
  });
  afterAll(async () => {
    await relay?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const lockedBy = (owner: { pid: number; port: number }) =>
    writeFile(path.join(dataDir, 'pgdata.lock'), JSON.stringify(owner));
  /** Opens DATA_DIR's database on `embeddedPort`, as `npm start`'s second process would. */
  const joinOn = (embeddedPort: number, poolSize = settings.DATABASE_POOL_SIZE) =>
    openDatabase(
      {
        ...settings,
        DATABASE_URL: undefined,
        DATA_DIR: dataDir,
        EMBEDDED_DB_PORT: embeddedPort,
        DATABASE_POOL_SIZE: poolSize,
      },
      'billing-joined',
    );
  /** The database of the process holding the lock, joined with `poolSize` connections asked for. */
  const joined = (poolSize: number) => joinOn(port, poolSize);

  it('joins it on EMBEDDED_DB_PORT, with at most 4 connections and the query timeout', async () => {
    await lockedBy({ pid: process.pid, port });
    const opened = await joined(10);
    try {
      expect(opened.mode).toBe('embedded-client');
      expect(opened.direct).toBeUndefined();
      expect((await backendsAtOnce(opened.db, 6)).size).toBe(4);
      const { rows } = await opened.db.query<{ name: string }>(
        "SELECT current_setting('application_name') AS name",
      );
      expect(rows).toEqual([{ name: 'billing-joined' }]);
      await expect(opened.db.query('SELECT pg_sleep(2)')).rejects.toThrow('Query read timeout');
    } finally {
      await opened.close();
    }
    await expect(opened.db.query('SELECT 1')).rejects.toThrow();
  });

  it('joins with fewer connections when DATABASE_POOL_SIZE asks for fewer than 4', async () => {
    await lockedBy({ pid: process.pid, port });
    const opened = await joined(2);
    try {
      expect((await backendsAtOnce(opened.db, 4)).size).toBe(2);
    } finally {
      await opened.close();
    }
  });

  it('refuses to join when the process serving DATA_DIR does so on another port', async () => {
    await lockedBy({ pid: process.pid, port: port + 1 });
    await expect(joinOn(port)).rejects.toThrow(
      new RegExp(
        `port ${port} \\(EMBEDDED_DB_PORT\\) is in use, but not by the embedded database of DATA_DIR .*that one is served on port ${port + 1}`,
      ),
    );
  });

  it('refuses to join when what answers on that port is not a database', async () => {
    // the lock names this process and a port where something else answers, and hangs up
    const stray = createServer((socket) => {
      socket.on('error', () => {});
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n', () => socket.destroy());
    });
    await new Promise<void>((resolve) => stray.listen(0, '127.0.0.1', resolve));
    const strayPort = (stray.address() as AddressInfo).port;
    try {
      await lockedBy({ pid: process.pid, port: strayPort });
      await expect(joinOn(strayPort)).rejects.toThrow(
        new RegExp(
          `port ${strayPort} \\(EMBEDDED_DB_PORT\\) is in use, but not by the embedded database \\(.+\\); free it`,
        ),
      );
    } finally {
      await new Promise((resolve) => stray.close(resolve));
    }
  });

  it('refuses to join when no live process serves DATA_DIR', async () => {
    // a pid no process has (past the kernel's pid_max)
    await lockedBy({ pid: 2 ** 22 + 1, port });
    await expect(joinOn(port)).rejects.toThrow(
      /is in use, but not by the embedded database of DATA_DIR .*\(no process serves it\)/,
    );
  });
});
