import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Database } from './database.js';

export const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

// Any constant shared by every migrator; the lock makes concurrent start-ups apply each file once.
const MIGRATION_LOCK_KEY = 7_224_001;

/**
 * Applies every `NNN_name.sql` file not yet recorded, in name order, each in its own transaction.
 * Runs unchanged on Postgres and PGlite. Returns the versions applied now.
 * On a connection of its own, without the pool's per-query timeout (DATABASE_QUERY_TIMEOUT_MS): that
 * bounds a request's query, while a migration may rightly take longer (an index on a large table),
 * and so may waiting for the lock while another process migrates. Past the timeout pg would give up
 * on the statement, not stop it, and the deploy would fail with the migration still running.
 */
export async function migrate(db: Database, directory = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(directory)).filter((f) => /^\d+_[\w-]+\.sql$/.test(f)).sort();
  const { query_timeout: _requestBound, ...connection } = db.pool.options;
  const client = new pg.Client(connection);
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set(
      (await client.query<{ version: string }>('SELECT version FROM schema_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    const applied: string[] = [];
    for (const file of files) {
      const version = file.replace(/\.sql$/, '');
      if (done.has(version)) continue;
      const sql = await readFile(path.join(directory, file), 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${file} failed: ${(error as Error).message}`, { cause: error });
      }
      applied.push(version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end().catch(() => {});
  }
}
