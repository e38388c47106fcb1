import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { afterCommit, Database } from '../../libs/db/index.js';
import { DependencyUnavailableError } from '../../libs/dependency-guard/index.js';
import { createTestDatabase, relayTo, type TestDatabase } from '../helpers/database.js';
import { runLogger } from '../helpers/run-log.js';

describe('Database on Postgres with preparedStatements', () => {
  let database: TestDatabase;
  let db: Database;
  beforeAll(async () => {
    database = await createTestDatabase('database');
    // one connection, so every query below runs in the session whose statements it inspects
    db = new Database(database.url, { poolSize: 1, preparedStatements: true });
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  const prepared = async () =>
    (
      await db.query<{ name: string; statement: string }>(
        'SELECT name, statement FROM pg_prepared_statements',
      )
    ).rows;

  it('prepares each parameterized text once per connection and reuses it', async () => {
    const text = 'SELECT $1::int + 1 AS n';
    expect((await db.query<{ n: number }>(text, [1])).rows).toEqual([{ n: 2 }]);
    expect((await db.query<{ n: number }>(text, [41])).rows).toEqual([{ n: 42 }]);
    const statements = (await prepared()).filter((s) => s.statement === text);
    expect(statements).toHaveLength(1);
    expect(statements[0]!.name).toMatch(/^billing_\d+$/);
  });

  it('runs a text without values on the simple protocol: several statements, nothing prepared', async () => {
    const before = (await prepared()).length;
    const result = await db.query('SELECT 1 AS a; SELECT 2 AS b');
    expect(Array.isArray(result)).toBe(true);
    expect((await prepared()).length).toBe(before);
  });

  it("prepares a transaction's parameterized statements the same way", async () => {
    const text = 'SELECT $1::int * 3 AS n';
    for (const n of [1, 2]) {
      const rows = await db.transaction(async (tx) => (await tx.query<{ n: number }>(text, [n])).rows);
      expect(rows).toEqual([{ n: n * 3 }]);
    }
    const statements = (await prepared()).filter((s) => s.statement === text);
    expect(statements).toHaveLength(1);
    expect(statements[0]!.name).toMatch(/^billing_\d+$/);
  });

  it("runs a transaction's concurrent queries one after the other, each answering its own", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    try {
      const answers = await db.transaction((tx) =>
        Promise.all([
          tx.query<{ n: number }>('SELECT $1::int AS n, pg_sleep(0.05)', [1]),
          ...[2, 3].map((n) => tx.query<{ n: number }>('SELECT $1::int AS n', [n])),
        ]),
      );
      expect(answers.map((result) => result.rows[0]!.n)).toEqual([1, 2, 3]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((message) => message.includes('already executing a query'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('opens a transaction in the modes asked for: read only refuses a write, the isolation is the one named', async () => {
    const modes = await db.transaction(
      async (tx) =>
        (
          await tx.query<{ read_only: string; isolation: string }>(
            "SELECT current_setting('transaction_read_only') AS read_only, current_setting('transaction_isolation') AS isolation",
          )
        ).rows[0],
      { readOnly: true, isolation: 'repeatable read' },
    );
    expect(modes).toEqual({ read_only: 'on', isolation: 'repeatable read' });
    await expect(
      db.transaction((tx) => tx.query('CREATE TEMP TABLE refused_in_read_only (n int)'), { readOnly: true }),
    ).rejects.toMatchObject({ code: '25006' });
    const plain = await db.transaction(
      async (tx) =>
        (
          await tx.query<{ read_only: string }>(
            "SELECT current_setting('transaction_read_only') AS read_only",
          )
        ).rows[0],
    );
    expect(plain).toEqual({ read_only: 'off' });
  });

  it('runs a commit hook once after COMMIT, however often it was given, and never for a rollback', async () => {
    const runs: string[] = [];
    await db.transaction(async (tx) => {
      const hook = () => runs.push('committed');
      expect(afterCommit(tx, hook)).toBe(true);
      afterCommit(tx, hook);
      await tx.query('SELECT 1');
      expect(runs).toEqual([]);
    });
    expect(runs).toEqual(['committed']);
    await expect(
      db.transaction(async (tx) => {
        afterCommit(tx, () => runs.push('rolled back'));
        throw new Error('the change fails');
      }),
    ).rejects.toThrow('the change fails');
    // a transaction refused at COMMIT itself (a deferred constraint) is a rollback too
    await expect(
      db.transaction(async (tx) => {
        afterCommit(tx, () => runs.push('refused at commit'));
        await tx.query('CREATE TEMP TABLE checked_at_commit (n int UNIQUE DEFERRABLE INITIALLY DEFERRED)');
        await tx.query('INSERT INTO checked_at_commit VALUES ($1), ($1)', [1]);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(runs).toEqual(['committed']);
  });

  it('keeps a committed transaction answered as committed when one of its commit hooks throws', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const runs: string[] = [];
      await db.query('CREATE TABLE IF NOT EXISTS hook_writes (n int)');
      const answer = await db.transaction(async (tx) => {
        await tx.query('INSERT INTO hook_writes VALUES (7)');
        afterCommit(tx, () => runs.push('before the failing one'));
        afterCommit(tx, () => {
          throw new Error('the hook fails');
        });
        afterCommit(tx, () => runs.push('after the failing one'));
        return 'written';
      });
      expect(answer).toBe('written');
      expect(runs).toEqual(['before the failing one', 'after the failing one']);
      expect((await db.query('SELECT n FROM hook_writes')).rows).toEqual([{ n: 7 }]);
      // the warning is emitted on the next tick
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => [warning.name, warning.message])).toEqual([
        ['CommitHookWarning', 'a commit hook failed: the hook fails'],
      ]);
      // the connection went back to the pool usable, outside any transaction
      expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('folds NOTIFYs of one channel within its window into one more at the window end', async () => {
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.channel));
    try {
      await listener.query('LISTEN folded_wakeups');
      db.notify('folded_wakeups');
      db.notify('folded_wakeups');
      db.notify('folded_wakeups');
      // the first at once, the two folded into one sent when the window closes
      await vi.waitFor(() => expect(heard).toHaveLength(2), { timeout: 5000, interval: 10 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard).toEqual(['folded_wakeups', 'folded_wakeups']);
      // the window has closed with nothing folded into it: the next call is sent at once again
      db.notify('folded_wakeups');
      await vi.waitFor(() => expect(heard).toHaveLength(3), { timeout: 500, interval: 5 });
    } finally {
      await listener.end();
    }
  });

  it('a failing prepared statement leaves the connection usable', async () => {
    await expect(db.query('SELECT 1 / $1::int AS n', [0])).rejects.toThrow(/division by zero/);
    expect((await db.query<{ n: number }>('SELECT 1 / $1::int AS n', [1])).rows).toEqual([{ n: 1 }]);
  });

  it("runs a transaction's text without values on the simple protocol: several statements, nothing prepared", async () => {
    const before = (await prepared()).length;
    const results = await db.transaction((tx) => tx.query('SELECT 1 AS a; SELECT 2 AS b'));
    expect((results as unknown as { rows: unknown[] }[]).map((result) => result.rows)).toEqual([
      [{ a: 1 }],
      [{ b: 2 }],
    ]);
    expect((await prepared()).length).toBe(before);
  });

  it('runs the statements queued behind a failed one in a transaction: a savepoint recovers it', async () => {
    const settled = await db.transaction((tx) =>
      Promise.allSettled([
        tx.query('SAVEPOINT before_failure'),
        tx.query('SELECT 1 / $1::int AS n', [0]),
        tx.query('ROLLBACK TO SAVEPOINT before_failure'),
        tx.query<{ n: number }>('SELECT $1::int AS n', [7]),
      ]),
    );
    expect(settled.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ code: '22012' });
    expect((settled[3] as PromiseFulfilledResult<pg.QueryResult<{ n: number }>>).value.rows).toEqual([
      { n: 7 },
    ]);
  });

  it('rolls back what a failed transaction wrote, whatever it threw', async () => {
    for (const thrown of [new Error('the change fails'), undefined, 'a string']) {
      await expect(
        db.transaction(async (tx) => {
          await tx.query('CREATE TEMP TABLE rolled_back (n int)');
          await tx.query('INSERT INTO rolled_back VALUES ($1)', [1]);
          throw thrown;
        }),
      ).rejects.toBe(thrown);
      // one connection: this session is the one the transaction ran in
      const { rows } = await db.query<{ t: string | null }>(
        "SELECT to_regclass('pg_temp.rolled_back')::text AS t",
      );
      expect(rows).toEqual([{ t: null }]);
    }
  });

  it("passes a query config through to the transaction's client as pg takes it", async () => {
    const rows = await db.transaction(async (tx) => [
      ...(await tx.query({ text: 'SELECT $1::int AS n, 2 AS m', values: [1], rowMode: 'array' })).rows,
      // a config and the values beside it
      ...(await tx.query({ text: 'SELECT $1::int AS n, 4 AS m', rowMode: 'array' }, [3])).rows,
    ]);
    expect(rows).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });

  it('lets the statements under way finish before close() resolves', async () => {
    const closing = new Database(database.url, { poolSize: 1 });
    await closing.query('SELECT 1');
    const finished: string[] = [];
    const running = closing.query('SELECT pg_sleep(0.1)').then(() => finished.push('statement'));
    await vi.waitFor(() => expect(closing.pool.idleCount).toBe(0), { timeout: 2000, interval: 1 });
    await closing.close();
    finished.push('close');
    await running;
    expect(finished).toEqual(['statement', 'close']);
  });

  it('takes no commit hook for a transaction once it has committed', async () => {
    const runs: string[] = [];
    let finished: pg.PoolClient | undefined;
    await db.transaction(async (tx) => {
      finished = tx;
    });
    expect(afterCommit(finished!, () => runs.push('late'))).toBe(false);
    await db.transaction(async (tx) => {
      await tx.query('SELECT 1');
    });
    expect(runs).toEqual([]);
  });

  it("hands a transaction's other members through bound to its client", async () => {
    const notices: string[] = [];
    const listen = (notice: { message?: string }) => notices.push(notice.message ?? '');
    await db.transaction(async (tx) => {
      // taken off the client, as a callback would be
      const { on, off } = tx;
      on('notice', listen);
      try {
        await tx.query("DO $$ BEGIN RAISE NOTICE 'from the transaction'; END $$");
      } finally {
        off('notice', listen);
      }
    });
    expect(notices).toEqual(['from the transaction']);
  });

  const backendPid = async (on: Database) =>
    (await on.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

  it('keeps the connection of a transaction that rolled back; drops the one of a failed guarded statement', async () => {
    const plain = new Database(database.url, { poolSize: 1 });
    const guarded = new Database(database.url, { poolSize: 1, stall: { waitMs: 10_000, log: runLogger() } });
    try {
      const before = await backendPid(plain);
      await expect(
        plain.transaction(async (tx) => {
          await tx.query('SELECT 1');
          throw new Error('the change fails');
        }),
      ).rejects.toThrow('the change fails');
      expect(await backendPid(plain)).toBe(before);

      // as pool.query does unguarded: a connection whose statement failed is not trusted again
      const first = await backendPid(guarded);
      await expect(guarded.query('SELECT 1 / $1::int AS n', [0])).rejects.toThrow(/division by zero/);
      expect(await backendPid(guarded)).not.toBe(first);
    } finally {
      await Promise.all([plain.close(), guarded.close()]);
    }
  });

  it('keeps an idle connection for the next query, and lives on when the server ends it while idle', async () => {
    const pooled = new Database(database.url, { poolSize: 1 });
    try {
      const first = await backendPid(pooled);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await backendPid(pooled)).toBe(first);
      // the server ends the idle connection: pg reports it on the pool, which must not crash the process
      await db.query('SELECT pg_terminate_backend($1)', [first]);
      await vi.waitFor(() => expect(pooled.pool.totalCount).toBe(0), { timeout: 2000, interval: 5 });
      expect(await backendPid(pooled)).not.toBe(first);
    } finally {
      await pooled.close();
    }
  });

  it('leaves no listener behind on a connection it gives back', async () => {
    const plain = new Database(database.url, { poolSize: 1 });
    const guarded = new Database(database.url, { poolSize: 1, stall: { waitMs: 10_000, log: runLogger() } });
    const errorListeners = (on: Database) => on.transaction(async (tx) => tx.listenerCount('error'));
    try {
      for (const on of [plain, guarded]) {
        const first = await errorListeners(on);
        for (let i = 0; i < 3; i++) {
          await on.query('SELECT $1::int AS n', [i]);
          await on.transaction((tx) => tx.query('SELECT 1'));
        }
        expect(await errorListeners(on)).toBe(first);
      }
    } finally {
      await Promise.all([plain.close(), guarded.close()]);
    }
  });

  it('opens at most poolSize connections, named applicationName (billing unless given)', async () => {
    const sized = new Database(database.url, { poolSize: 2, applicationName: 'billing-pool-check' });
    const plain = new Database(database.url);
    try {
      const answers = await Promise.all(
        [1, 2, 3, 4].map(() =>
          sized.query<{ pid: number; name: string }>(
            "SELECT pg_backend_pid() AS pid, current_setting('application_name') AS name, pg_sleep(0.05)",
          ),
        ),
      );
      expect(new Set(answers.map((result) => result.rows[0]!.pid)).size).toBe(2);
      expect(answers.map((result) => result.rows[0]!.name)).toEqual(Array(4).fill('billing-pool-check'));
      const { rows } = await plain.query<{ name: string }>(
        "SELECT current_setting('application_name') AS name",
      );
      expect(rows).toEqual([{ name: 'billing' }]);
    } finally {
      await Promise.all([sized.close(), plain.close()]);
    }
  });
});

describe('Database against a server that accepts connections and never answers', () => {
  let silent: Server;
  let port: number;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    silent = createServer((socket) => {
      sockets.add(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    port = (silent.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('fails the query once the connect timeout passes, instead of waiting for good', async () => {
    const db = new Database(`postgres://postgres@127.0.0.1:${port}/nowhere`, { connectTimeoutMs: 300 });
    const started = Date.now();
    await expect(db.query('SELECT 1')).rejects.toThrow(/timeout/i);
    expect(Date.now() - started).toBeLessThan(5000);
    void db.close().catch(() => {});
  });
});

describe('Database when its server stops answering after the connections were made', () => {
  let database: TestDatabase;
  let proxy: Server;
  let frozen = false;
  const upstreams = new Set<Socket>();
  beforeAll(async () => {
    database = await createTestDatabase('database-frozen');
    const target = new URL(database.url);
    // A TCP proxy to Postgres that, while frozen, passes nothing on: a server that hangs.
    proxy = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      upstreams.add(upstream);
      client.on('data', (chunk) => {
        if (!frozen) upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        if (!frozen) client.write(chunk);
      });
      const end = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('close', end).on('error', end);
      upstream.on('close', end).on('error', end);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const upstream of upstreams) upstream.destroy();
    await new Promise((resolve) => proxy.close(resolve));
    await database.drop();
  });

  it('fails a query past the query timeout, drops its connection, and serves again once it answers', async () => {
    const url = new URL(database.url);
    url.host = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const db = new Database(url.toString(), { poolSize: 1, queryTimeoutMs: 300 });
    expect((await db.query<{ n: number }>('SELECT $1::int AS n', [1])).rows).toEqual([{ n: 1 }]);
    frozen = true;
    try {
      const started = Date.now();
      await expect(db.query('SELECT 1')).rejects.toThrow('Query read timeout');
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      frozen = false;
    }
    // The one pooled connection was stuck behind a query that never ended: dropped, not reused.
    expect((await db.query<{ n: number }>('SELECT $1::int AS n', [2])).rows).toEqual([{ n: 2 }]);

    // The same inside a transaction: no ROLLBACK waits behind the stuck statement (pg would queue
    // it there, to time out in its turn), the connection is dropped at once.
    const started = Date.now();
    let timedOutAt = 0;
    await expect(
      db.transaction(async (tx) => {
        await tx.query('SELECT 1');
        frozen = true;
        await tx.query('SELECT 2').catch((error: unknown) => {
          timedOutAt = performance.now();
          throw error;
        });
      }),
    ).rejects.toThrow('Query read timeout');
    const answeredAt = performance.now();
    frozen = false;
    expect(Date.now() - started).toBeLessThan(3000);
    expect(timedOutAt).toBeGreaterThan(0);
    expect(answeredAt - timedOutAt).toBeLessThan(200);
    await db.transaction(async (tx) => expect((await tx.query('SELECT 3 AS n')).rows).toEqual([{ n: 3 }]));
    await db.close();
  });

  it('drops the connection of a transaction whose ROLLBACK got no answer', async () => {
    const url = new URL(database.url);
    url.host = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const db = new Database(url.toString(), { poolSize: 1, queryTimeoutMs: 300 });
    try {
      const pid = async () =>
        (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const before = await pid();
      await expect(
        db.transaction(async (tx) => {
          await tx.query('SELECT 1');
          frozen = true;
          throw new Error('the change fails');
        }),
      ).rejects.toThrow('the change fails');
      frozen = false;
      // the ROLLBACK never reached the server: that connection is not lent out again
      expect(await pid()).not.toBe(before);
    } finally {
      frozen = false;
      await db.close();
    }
  });
});

describe('Database under the stall guard, when a connection it has lent out is cut', () => {
  it('fails that statement and keeps the process alive', async () => {
    const database = await createTestDatabase('lost-connection');
    // A TCP relay the test can cut: the connection ends with no message from the server.
    const relay = await relayTo(database.url);
    const db = new Database(relay.url, { poolSize: 1, stall: { waitMs: 10_000, log: runLogger() } });
    // unguarded, in a transaction: the same, the transaction's own listener keeping the process alive
    const plain = new Database(relay.url, { poolSize: 1 });
    try {
      await db.query('SELECT 1');
      const sleeping = db.query('SELECT pg_sleep(30)');
      const sleepingInTransaction = plain.transaction((tx) => tx.query('SELECT pg_sleep(30)'));
      await new Promise((resolve) => setTimeout(resolve, 100));
      relay.cut();
      // pg emits 'error' on the lent-out client in the same tick as it fails the statement: with
      // nobody listening, that is an uncaught exception, which vitest reports as a failed run.
      await Promise.all([
        expect(sleeping).rejects.toThrow(/Connection terminated/),
        expect(sleepingInTransaction).rejects.toThrow(/Connection terminated/),
      ]);
    } finally {
      await plain.close().catch(() => {});
      await db.close().catch(() => {});
      await relay.close();
      await database.drop();
    }
  });
});

describe('Database under the stall guard, when the database is found down', () => {
  let database: TestDatabase;
  /** Holds the lock; `watcher` reads pg_stat_activity outside any transaction. */
  let direct: pg.Client;
  let watcher: pg.Client;
  beforeAll(async () => {
    database = await createTestDatabase('stall-outage');
    direct = new pg.Client({ connectionString: database.url, application_name: 'billing-test-direct' });
    watcher = new pg.Client({ connectionString: database.url, application_name: 'billing-test-watcher' });
    await Promise.all([direct.connect(), watcher.connect()]);
    await direct.query('CREATE TABLE given_up (n int)');
  });
  afterAll(async () => {
    await Promise.all([direct.end(), watcher.end()]);
    await database.drop();
  });

  /** The backends of this database opened under `applicationName`. */
  const backends = async (applicationName: string) =>
    (
      await watcher.query<{ pid: number; state: string; query: string }>(
        'SELECT pid, state, query FROM pg_stat_activity WHERE datname = $1 AND application_name = $2',
        [database.name, applicationName],
      )
    ).rows;

  it('gives up every waiting call at once, and none of them writes later', async () => {
    const name = 'billing-outage';
    const db = new Database(database.url, {
      poolSize: 2,
      applicationName: name,
      stall: { waitMs: 10_000, log: runLogger() },
    });
    try {
      await direct.query('BEGIN');
      await direct.query('LOCK TABLE given_up');
      // a transaction stuck behind the lock, a long statement, and a call waiting for a connection
      const stuck = db.transaction((tx) => tx.query('INSERT INTO given_up VALUES ($1)', [1]));
      const sleeping = db.query('SELECT pg_sleep(30)');
      await vi.waitFor(
        async () => expect((await backends(name)).map((b) => b.state)).toEqual(['active', 'active']),
        {
          timeout: 5000,
          interval: 20,
        },
      );
      const waiting = db.query('INSERT INTO given_up VALUES ($1)', [2]);
      const outcomes = Promise.allSettled([stuck, sleeping, waiting]);
      const sleeper = (await backends(name)).find((b) => b.query.includes('pg_sleep'))!;
      // the server ends one connection (as at a shutdown): an outage, not a failed statement
      await direct.query('SELECT pg_terminate_backend($1)', [sleeper.pid]);
      const settled = await outcomes;
      await direct.query('COMMIT');
      expect(settled.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
      for (const outcome of settled) {
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(DependencyUnavailableError);
        expect((outcome as PromiseRejectedResult).reason).toMatchObject({ dependency: 'database' });
      }
      // Every connection it held or was getting is dropped; the stuck INSERT, let through by the
      // COMMIT above, finds its connection gone and never commits.
      await vi.waitFor(
        async () => {
          expect(await backends(name)).toEqual([]);
          expect([db.pool.totalCount, db.pool.waitingCount]).toEqual([0, 0]);
        },
        { timeout: 5000, interval: 20 },
      );
      expect((await direct.query('SELECT n FROM given_up')).rows).toEqual([]);
    } finally {
      await direct.query('ROLLBACK').catch(() => {});
      await db.close();
    }
  });

  it('lets a slow statement run on while the database answers, and closes its probe', async () => {
    const name = 'billing-slow';
    const db = new Database(database.url, {
      poolSize: 1,
      applicationName: name,
      stall: { waitMs: 500, log: runLogger() },
    });
    try {
      const { rows } = await db.query<{ n: number }>('SELECT $1::int AS n FROM pg_sleep(1.2)', [1]);
      expect(rows).toEqual([{ n: 1 }]);
      // the probe ran on a connection of its own (no application name), closed once it answered
      await vi.waitFor(async () => expect(await backends('')).toEqual([]), { timeout: 2000, interval: 20 });
    } finally {
      await db.close();
    }
  });
});
