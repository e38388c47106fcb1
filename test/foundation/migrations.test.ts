import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
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
});
