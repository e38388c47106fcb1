import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, type EmbeddedPostgres, migrate, startEmbeddedPostgres } from '../../libs/db/index.js';
import { PostgresUsageSink, type UsageEventRecord } from '../../libs/usage/index.js';
import { freePort } from '../helpers/processes.js';

/**
 * The process that serves the embedded database reaches it without the socket (the in-process usage
 * log writes so). Such a statement takes its turn like a connection: never inside another
 * connection's transaction, whose rollback would take an answered event with it.
 */
describe('embedded PGlite, reached without its socket', () => {
  let dataDir: string;
  let server: EmbeddedPostgres;
  let db: Database;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'billing-pglite-direct-'));
    server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port: freePort() });
    db = new Database(server.url, { poolSize: 3 });
    await migrate(db);
    await db.query('CREATE TABLE direct_probe (id int PRIMARY KEY)');
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("waits for a connection's open transaction, and its rollback does not undo the statement", async () => {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('INSERT INTO direct_probe VALUES (1)');
      let done = false;
      const direct = server.direct
        .query('INSERT INTO direct_probe VALUES (2) RETURNING id')
        .then((result) => {
          done = true;
          return result;
        });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(done).toBe(false);
      // the connection goes on with its transaction meanwhile, and sees nothing of the statement
      const { rows: inside } = await client.query('SELECT id FROM direct_probe ORDER BY id');
      expect(inside).toEqual([{ id: 1 }]);
      await client.query('ROLLBACK');
      expect((await direct).rows).toEqual([{ id: 2 }]);
    } finally {
      client.release();
    }
    const { rows } = await db.query('SELECT id FROM direct_probe ORDER BY id');
    expect(rows).toEqual([{ id: 2 }]);
  });

  it('a failed statement fails alone, and the queue goes on', async () => {
    await expect(server.direct.query('INSERT INTO direct_probe VALUES (2)')).rejects.toThrow(/duplicate key/);
    // callers tell errors apart by code
    await expect(server.direct.query('INSERT INTO direct_probe VALUES (2)')).rejects.toMatchObject({
      code: '23505',
      constraint: 'direct_probe_pkey',
    });
    expect((await server.direct.query('SELECT count(*) AS n FROM direct_probe')).rows).toEqual([{ n: 1 }]);
    expect((await db.query('SELECT count(*) AS n FROM direct_probe')).rows).toEqual([{ n: 1 }]);
  });

  it("types rows as the pool does, so the usage log's stored event is the same either way", async () => {
    const now = Date.now();
    const event: UsageEventRecord = {
      id: randomUUID(),
      orgId: 7,
      subscriptionItemId: 9_007_199_254,
      idempotencyKey: `direct-${randomUUID()}`,
      quantity: '2.50000001',
      occurredAtMs: now - 1000,
      recordedAtMs: now,
    };
    const direct = new PostgresUsageSink(server.direct);
    const pooled = new PostgresUsageSink(db);
    expect(await direct.writeReturningStored([event])).toEqual({ stored: [event], inserted: [event] });
    // a repeat of its identity (a retry after a restart forgot the key): the stored event wins
    const repeat = { ...event, id: randomUUID(), quantity: '5' };
    const { stored, inserted } = await direct.writeReturningStored([repeat]);
    expect(inserted).toEqual([]);
    expect(stored).toEqual([{ ...event, quantity: '2.50000001' }]);
    expect(await direct.find(event)).toEqual(await pooled.find(event));
    const sql = `SELECT org_id, quantity, occurred_at, (occurred_at AT TIME ZONE 'UTC')::date AS day
                   FROM usage_events WHERE id = $1`;
    expect((await server.direct.query(sql, [event.id])).rows).toEqual((await db.query(sql, [event.id])).rows);
  });

  it('prepares each statement text once, and prepares it again when another connection dropped it', async () => {
    const text = 'SELECT id FROM direct_probe WHERE id >= $1 ORDER BY id';
    expect((await server.direct.query(text, [0])).rows).toEqual([{ id: 2 }]);
    expect((await server.direct.query(text, [3])).rows).toEqual([]);
    // the one session every connection shares holds it under a name of ours, prepared once
    const named = `SELECT count(*) AS n FROM pg_prepared_statements WHERE statement = $1 AND name LIKE 'billing_direct_%'`;
    expect((await db.query(named, [text])).rows).toEqual([{ n: 1 }]);
    await db.query('DEALLOCATE ALL');
    expect((await server.direct.query(text, [0])).rows).toEqual([{ id: 2 }]);
    expect((await db.query(named, [text])).rows).toEqual([{ n: 1 }]);
  });

  it('a migration that changes what a prepared statement returns does not break it', async () => {
    const text = 'SELECT * FROM direct_probe ORDER BY id';
    expect((await server.direct.query(text)).rows).toEqual([{ id: 2 }]);
    await db.query(`ALTER TABLE direct_probe ADD COLUMN note text NOT NULL DEFAULT 'x'`);
    expect((await server.direct.query(text)).rows).toEqual([{ id: 2, note: 'x' }]);
    await db.query('ALTER TABLE direct_probe DROP COLUMN note');
  });

  it('keeps idempotency keys byte for byte through the array parameters', async () => {
    const now = Date.now();
    const keys = ['a"b', 'c\\d', 'e,f', '{g}', 'NULL', ' h ', 'ü-\u0001'];
    const events: UsageEventRecord[] = keys.map((idempotencyKey) => ({
      id: randomUUID(),
      orgId: 8,
      subscriptionItemId: 11,
      idempotencyKey,
      quantity: '1',
      occurredAtMs: now,
      recordedAtMs: now,
    }));
    const sink = new PostgresUsageSink(server.direct);
    expect((await sink.writeReturningStored(events)).inserted).toEqual(events);
    const { rows } = await db.query<{ idempotency_key: string }>(
      'SELECT idempotency_key FROM usage_events WHERE org_id = 8 ORDER BY idempotency_key',
    );
    expect(rows.map((row) => row.idempotency_key)).toEqual([...keys].sort((a, b) => (a < b ? -1 : 1)));
  });
});
