import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Queryable } from './database.js';

export interface EmbeddedPostgres {
  url: string;
  /** The same database for this process, without the socket (pglite-socket-adapter.ts, directQueryable). */
  direct: Queryable;
  stop(): Promise<void>;
}

/**
 * Serves a PGlite database (files under dataDir) on a loopback port, so every process (the
 * services and the console) talks to it with `pg` exactly as to Postgres. All connections share
 * PGlite's one backend, given to one connection at a time for as long as that connection needs it
 * whole (pglite-socket-adapter.ts). PGlite and its adapter are loaded here, on the first start: a
 * process on Postgres (distributed mode) never holds the WASM database's code.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  host: string;
  port: number;
}): Promise<EmbeddedPostgres> {
  const directory = path.resolve(options.dataDir, 'pgdata');
  // Owner only: PGlite writes its files world-readable, and they hold API key hashes, webhook
  // signing secrets and customers' data. A directory others cannot enter keeps them out.
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  chmodSync(directory, 0o700);
  const releaseLock = lockDataDirectory(`${directory}.lock`, options.port);
  try {
    const [{ PGlite }, { servePglite }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('./pglite-socket-adapter.js'),
    ]);
    const db = await PGlite.create({ dataDir: directory });
    const server = await servePglite(db, { host: options.host, port: options.port, maxConnections: 64 });
    return {
      url: `postgres://postgres@${options.host}:${options.port}/postgres`,
      direct: server.direct,
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

/** The live process serving the embedded database in `dataDir`, from its lock file; none if none. */
export function embeddedServerOf(dataDir: string): { pid: number; port: number } | undefined {
  const owner = readOwner(`${path.resolve(dataDir, 'pgdata')}.lock`);
  return owner && isAlive(owner.pid) ? owner : undefined;
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
