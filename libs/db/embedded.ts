import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { QueryResult, QueryResultRow } from 'pg';
import type { Queryable } from './database.js';
import type { ErrorFields, FromWorker, PgliteWorkerData, ToWorker } from './pglite-worker.js';

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
 * whole (pglite-socket-adapter.ts). PGlite and that server run on a worker thread of their own
 * (pglite-worker.ts): the WASM backend then executes while this thread serves requests.
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
    const worker = await startWorker({
      directory,
      host: options.host,
      port: options.port,
      maxConnections: 64,
    });
    return {
      url: `postgres://postgres@${options.host}:${options.port}/postgres`,
      direct: worker.direct,
      async stop() {
        try {
          await worker.stop();
        } finally {
          releaseLock();
        }
      },
    };
  } catch (error) {
    releaseLock();
    throw error;
  }
}

/**
 * Starts pglite-worker.ts and waits until it serves. Run from TypeScript sources (npm start, vitest),
 * the thread registers tsx itself first: a worker runs neither `--import tsx` nor vitest's transform.
 */
async function startWorker(data: PgliteWorkerData): Promise<{ direct: Queryable; stop(): Promise<void> }> {
  const source = import.meta.url.endsWith('.ts');
  const entry = new URL(source ? './pglite-worker.ts' : './pglite-worker.js', import.meta.url);
  const worker = source
    ? new Worker(
        `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`,
        { eval: true, workerData: data },
      )
    : new Worker(entry, { workerData: data });
  const pending = new Map<number, { resolve(result: QueryResult): void; reject(error: unknown): void }>();
  let nextId = 0;
  let gone: Error | undefined;
  let onStopped: ((message: Extract<FromWorker, { type: 'stopped' }>) => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    const fail = (error: Error) => {
      gone ??= error;
      for (const query of pending.values()) query.reject(gone);
      pending.clear();
      reject(gone);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the embedded database's thread ended (exit code ${code})`)));
    worker.on('message', (message: FromWorker) => {
      if (message.type === 'ready') resolve();
      else if (message.type === 'failed') fail(errorOf(message.error));
      else if (message.type === 'stopped') onStopped?.(message);
      else {
        const query = pending.get(message.id);
        if (!query) return;
        pending.delete(message.id);
        if (message.type === 'result') {
          query.resolve({ rows: message.rows, rowCount: message.rowCount, command: '', oid: 0, fields: [] });
        } else query.reject(errorOf(message.error));
      }
    });
  });
  try {
    await ready;
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  const send = (message: ToWorker) => worker.postMessage(message);
  return {
    direct: {
      query<R extends QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>> {
        if (gone) return Promise.reject(gone);
        return new Promise<QueryResult<R>>((resolve, reject) => {
          const id = nextId++;
          pending.set(id, { resolve: resolve as (result: QueryResult) => void, reject });
          send({ type: 'query', id, text, values });
        });
      },
    },
    async stop() {
      if (gone) return;
      const stopped = new Promise<Extract<FromWorker, { type: 'stopped' }>>((resolve) => {
        onStopped = resolve;
      });
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      send({ type: 'stop' });
      const { error } = await stopped;
      await exited;
      if (error) throw errorOf(error);
    },
  };
}

/** An error of the worker's, as the caller would have caught it there (code, detail, ...). */
function errorOf(fields: ErrorFields): Error {
  const { message, ...rest } = fields;
  return Object.assign(new Error(message), rest);
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
