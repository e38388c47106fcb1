import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

/**
 * Serves a PGlite database (files under dataDir) on a loopback port, so every process (the
 * services and the console) talks to it with `pg` exactly as to Postgres. pglite-socket queues
 * queries from all connections onto the single PGlite instance and holds the others while one
 * connection is inside a transaction, so transactions stay isolated (one writer at a time).
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  host: string;
  port: number;
}): Promise<EmbeddedPostgres> {
  const directory = path.resolve(options.dataDir, 'pgdata');
  mkdirSync(directory, { recursive: true });
  const releaseLock = lockDataDirectory(`${directory}.lock`, options.port);
  try {
    const db = await PGlite.create({ dataDir: directory });
    const server = new PGLiteSocketServer({ db, host: options.host, port: options.port, maxConnections: 64 });
    await server.start();
    return {
      url: `postgres://postgres@${options.host}:${options.port}/postgres`,
      async stop() {
        await server.stop();
        await db.close();
        releaseLock();
      },
    };
  } catch (error) {
    releaseLock();
    throw error;
  }
}

/** Two PGlite instances on one directory would corrupt it: the lock file holds the owner's pid. */
function lockDataDirectory(lockPath: string, port: number): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeSync(fd, JSON.stringify({ pid: process.pid, port }));
      closeSync(fd);
      return () => rmSync(lockPath, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = readOwner(lockPath);
      if (owner && isAlive(owner.pid)) {
        throw new Error(
          `the embedded database in ${path.dirname(lockPath)} is served by process ${owner.pid} on port ${owner.port}; ` +
            'set EMBEDDED_DB_PORT to that port, or stop that process',
        );
      }
      rmSync(lockPath, { force: true });
    }
  }
  throw new Error(`could not lock ${lockPath}`);
}

function readOwner(lockPath: string): { pid: number; port: number } | undefined {
  try {
    return JSON.parse(readFileSync(lockPath, 'utf8'));
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
