import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Database, migrate } from '../../libs/db/index.js';
import { createTestDatabase } from '../helpers/database.js';
import { roundTripEveryTable } from '../helpers/round-trip.js';

describe('migrations', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('apply on Postgres, are idempotent, and every table round-trips', async () => {
    const database = await createTestDatabase('migrations');
    cleanups.push(() => database.drop());
    // the template is already migrated: a second run applies nothing
    expect(await migrate(database.db)).toEqual([]);
    // the connection of its own is closed once it is done, not left open to the database
    const leftOpen = async () =>
      (
        await database.db.query(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_advisory_unlock%'",
        )
      ).rows;
    await vi.waitFor(async () => expect(await leftOpen()).toEqual([]), { timeout: 2000, interval: 20 });
    const counts = await roundTripEveryTable(database.db);
    expect(Object.values(counts).every((n) => n === 1)).toBe(true);
  });

  it('are not cut by the per-query timeout that bounds requests', async () => {
    const database = await createTestDatabase('migrations-slow');
    cleanups.push(() => database.drop());
    const directory = await mkdtemp(path.join(tmpdir(), 'migrations-'));
    cleanups.push(() => rm(directory, { recursive: true, force: true }));
    await writeFile(
      path.join(directory, '999_slow.sql'),
      'SELECT pg_sleep(1.2);\nCREATE TABLE slow_done (id int);',
    );
    const bounded = new Database(database.url, { poolSize: 2, queryTimeoutMs: 400 });
    cleanups.push(() => bounded.close());
    // The pool's own queries are still bounded.
    await expect(bounded.query('SELECT pg_sleep(1.2)')).rejects.toThrow(/timeout/i);
    expect(await migrate(bounded, directory)).toEqual(['999_slow']);
    const { rows } = await bounded.query<{ t: string }>("SELECT to_regclass('slow_done')::text AS t");
    expect(rows[0]?.t).toBe('slow_done');
  });
  const migrationsIn = async (files: Record<string, string>): Promise<string> => {
    const directory = await mkdtemp(path.join(tmpdir(), 'migrations-'));
    cleanups.push(() => rm(directory, { recursive: true, force: true }));
    for (const [name, sql] of Object.entries(files)) await writeFile(path.join(directory, name), sql);
    return directory;
  };
  const tableExists = async (db: Database, table: string) =>
    (await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table])).rows[0]?.t === table;

  it('apply in name order, skip other files, and stop at a failing one with nothing of it kept', async () => {
    const database = await createTestDatabase('migrations-order');
    cleanups.push(() => database.drop());
    const directory = await migrationsIn({
      '902_child.sql': 'CREATE TABLE order_child (parent int REFERENCES order_parent (id));',
      '901_parent.sql': 'CREATE TABLE order_parent (id int PRIMARY KEY);',
      'README.txt': 'not a migration',
      // an editor's lock file and a backup copy: names that hold a migration's name, not one
      '.#900_lock.sql': 'CREATE TABLE from_lock_file (id int);',
      '900_old.sql.bak': 'CREATE TABLE from_backup (id int);',
      '903_broken.sql': 'CREATE TABLE half_done (id int);\nSELECT 1 / 0;',
      '904_after.sql': 'CREATE TABLE after_broken (id int);',
    });
    const failed = await migrate(database.db, directory).catch((error: unknown) => error);
    expect(failed).toMatchObject({
      message: expect.stringMatching(/migration 903_broken\.sql failed: division by zero/),
      // Postgres's own error kept as the cause, with its SQLSTATE
      cause: { code: '22012' },
    });
    const { rows } = await database.db.query<{ version: string }>(
      "SELECT version FROM schema_migrations WHERE version LIKE '90%' ORDER BY version",
    );
    expect(rows.map((r) => r.version)).toEqual(['901_parent', '902_child']);
    expect(await tableExists(database.db, 'order_child')).toBe(true);
    expect(await tableExists(database.db, 'half_done')).toBe(false);
    expect(await tableExists(database.db, 'after_broken')).toBe(false);
    expect(await tableExists(database.db, 'from_lock_file')).toBe(false);
    expect(await tableExists(database.db, 'from_backup')).toBe(false);
    // a file and its record commit together, in one transaction
    const { rows: writers } = await database.db.query<{ table: string; record: string }>(
      `SELECT (SELECT xmin::text FROM pg_class WHERE oid = 'order_child'::regclass) AS table,
              (SELECT xmin::text FROM schema_migrations WHERE version = $1) AS record`,
      ['902_child'],
    );
    expect(writers[0]!.record).toBe(writers[0]!.table);
  });

  it('apply each file once when two processes start at the same time', async () => {
    const database = await createTestDatabase('migrations-race');
    cleanups.push(() => database.drop());
    const directory = await migrationsIn({
      '905_slow_once.sql': 'SELECT pg_sleep(0.3);\nCREATE TABLE applied_once (id int);',
    });
    const other = new Database(database.url, { poolSize: 1 });
    cleanups.push(() => other.close());
    const [first, second] = await Promise.all([migrate(database.db, directory), migrate(other, directory)]);
    expect([...first, ...second]).toEqual(['905_slow_once']);
    expect(await tableExists(database.db, 'applied_once')).toBe(true);
  });
});
