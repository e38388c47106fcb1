import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../libs/db/index.js';
import { freePort, isListening } from '../helpers/processes.js';

describe('openDatabase without DATABASE_URL, when nothing serves the embedded database', () => {
  it('serves DATA_DIR itself with the pool size and query timeout of its settings, and stops it on close', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-open-served-'));
    const lockFile = path.join(dataDir, 'pgdata.lock');
    // left by a process that died without cleaning up (a pid past the kernel's pid_max): taken over
    await writeFile(lockFile, JSON.stringify({ pid: 2 ** 22 + 1, port: 1 }));
    const port = freePort();
    try {
      const opened = await openDatabase(
        {
          DATABASE_URL: undefined,
          DATABASE_POOL_SIZE: 2,
          DATABASE_QUERY_TIMEOUT_MS: 300,
          DATABASE_STALL_MS: 10_000,
          DATA_DIR: dataDir,
          EMBEDDED_DB_PORT: port,
        },
        'billing-served',
      );
      try {
        expect(opened.mode).toBe('embedded-server');
        // the same database, reached without the socket
        await opened.db.query('CREATE TABLE served_here (n int)');
        await opened.direct!.query('INSERT INTO served_here VALUES ($1)', [7]);
        expect((await opened.db.query('SELECT n FROM served_here')).rows).toEqual([{ n: 7 }]);
        await Promise.all([1, 2, 3, 4].map((n) => opened.db.query('SELECT $1::int AS n', [n])));
        expect(opened.db.pool.totalCount).toBe(2);
        await expect(opened.db.query('SELECT pg_sleep(1)')).rejects.toThrow('Query read timeout');
      } finally {
        await opened.close();
      }
      // its pool is ended, not left to reconnect to a port nothing serves
      await expect(opened.db.query('SELECT 1')).rejects.toThrow(
        'Cannot use a pool after calling end on the pool',
      );
      expect(await isListening(port)).toBe(false);
      expect(existsSync(lockFile)).toBe(false);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
