import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../libs/db/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

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
