import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { afterCommit, Database } from '../../libs/db/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
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
    } finally {
      await listener.end();
    }
  });

  it('a failing prepared statement leaves the connection usable', async () => {
    await expect(db.query('SELECT 1 / $1::int AS n', [0])).rejects.toThrow(/division by zero/);
    expect((await db.query<{ n: number }>('SELECT 1 / $1::int AS n', [1])).rows).toEqual([{ n: 1 }]);
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

    // The same inside a transaction: no ROLLBACK waits behind the stuck statement.
    const started = Date.now();
    await expect(
      db.transaction(async (tx) => {
        await tx.query('SELECT 1');
        frozen = true;
        await tx.query('SELECT 2');
      }),
    ).rejects.toThrow('Query read timeout');
    frozen = false;
    expect(Date.now() - started).toBeLessThan(3000);
    await db.transaction(async (tx) => expect((await tx.query('SELECT 3 AS n')).rows).toEqual([{ n: 3 }]));
    await db.close();
  });
});

describe('Database under the stall guard, when a connection it has lent out is cut', () => {
  it('fails that statement and keeps the process alive', async () => {
    const database = await createTestDatabase('lost-connection');
    const target = new URL(database.url);
    // A TCP relay the test can cut: the connection ends with no message from the server.
    const cut = new Set<Socket>();
    const relay = createServer((client) => {
      const server = connect(Number(target.port || 5432), target.hostname);
      for (const socket of [client, server]) {
        cut.add(socket);
        socket.on('error', () => socket.destroy());
      }
      client.pipe(server).pipe(client);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayed = new URL(database.url);
    relayed.hostname = '127.0.0.1';
    relayed.port = String((relay.address() as AddressInfo).port);
    const db = new Database(relayed.toString(), { poolSize: 1, stall: { waitMs: 10_000, log: runLogger() } });
    try {
      await db.query('SELECT 1');
      const sleeping = db.query('SELECT pg_sleep(30)');
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (const socket of cut) socket.destroy();
      // pg emits 'error' on the lent-out client in the same tick as it fails the statement: with
      // nobody listening, that is an uncaught exception, which vitest reports as a failed run.
      await expect(sleeping).rejects.toThrow(/Connection terminated/);
    } finally {
      await db.close().catch(() => {});
      relay.close();
      await database.drop();
    }
  });
});
