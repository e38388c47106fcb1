import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Database, MIGRATIONS_DIR, migrate, startEmbeddedPostgres } from '../../libs/db/index.js';
import { roundTripEveryTable } from '../helpers/round-trip.js';

/** The embedded database (PGlite served on a loopback socket) runs the same migrations as Postgres. */
describe('embedded PGlite', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('apply on embedded PGlite through the socket, and every table round-trips', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-pglite-'));
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port });
    const db = new Database(server.url, { poolSize: 3 });
    cleanups.push(async () => {
      await db.close();
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    });
    const versions = (await readdir(MIGRATIONS_DIR))
      .filter((file) => file.endsWith('.sql'))
      .sort()
      .map((file) => file.replace(/\.sql$/, ''));
    expect(await migrate(db)).toEqual(versions);
    expect(await migrate(db)).toEqual([]);
    const counts = await roundTripEveryTable(db);
    expect(Object.values(counts).every((n) => n === 1)).toBe(true);
  });

  it('refuses a second process on the same embedded data directory', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-pglite-'));
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port });
    cleanups.push(async () => {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    });
    // the lock names this process as the owner; a second server on the directory must refuse
    await expect(startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port: port + 1 })).rejects.toThrow(
      /served by process/,
    );
  });
});
