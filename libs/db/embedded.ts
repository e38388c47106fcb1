import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

/**
 * Serves a PGlite database (files under dataDir) on a loopback port, so every process (the
 * services and the console) talks to it with `pg` exactly as to Postgres. All connections share
 * PGlite's one backend; `ConnectionTurns` gives it to one connection at a time for as long as that
 * connection needs it whole (see there).
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
    const db = await PGlite.create({ dataDir: directory });
    const server = new PGLiteSocketServer({ db, host: options.host, port: options.port, maxConnections: 64 });
    // Its handlers take the queue from the server when a connection arrives: replaced before any.
    (server as unknown as { queryQueue: ConnectionTurns }).queryQueue = new ConnectionTurns(db);
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

interface QueuedMessage {
  connection: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (error: unknown) => void;
}

/** Extended-query messages before the Sync that ends them: Parse, Bind, Describe, Execute, Close, Flush. */
const EXTENDED_QUERY = new Set(['P', 'B', 'D', 'E', 'C', 'H'].map((type) => type.charCodeAt(0)));
const SYNC = 'S'.charCodeAt(0);

/**
 * The queue of protocol messages pglite-socket's connections feed PGlite's single backend (it
 * replaces pglite-socket 0.2's own, which has the same interface). One connection holds the
 * backend, and the others' messages wait, while that connection is
 * - inside a transaction (as pglite-socket's queue did), or
 * - between an extended-query message and its Sync. pglite-socket's queue let another
 *   connection's Parse run between one connection's Parse and Bind; the Bind then met the other's
 *   unnamed statement ("bind message supplies 2 parameters, but prepared statement "" requires 4")
 *   and a read failed with a 500 now and then.
 * A message that fails is answered with its error and the queue goes on (pglite-socket's stalled).
 */
export class ConnectionTurns {
  private queue: QueuedMessage[] = [];
  private processing = false;
  /** The connection whose messages ran last, and whether it is between Parse and Sync. */
  private lastConnection: number | undefined;
  private midExtendedQuery = false;

  constructor(private readonly db: PGlite) {}

  enqueue(connection: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ connection, message, onData, resolve, reject });
      void this.process();
    });
  }

  getQueueLength(): number {
    return this.queue.length;
  }

  /** The connection closed: its queued messages will never run. */
  clearQueueForHandler(connection: number): void {
    this.queue = this.queue.filter((queued) => {
      if (queued.connection !== connection) return true;
      queued.reject(new Error('Handler disconnected'));
      return false;
    });
  }

  /** The connection closed: whatever it held is given up (its transaction rolled back). */
  async clearTransactionIfNeeded(connection: number): Promise<void> {
    if (this.lastConnection !== connection) return;
    if (this.midExtendedQuery) {
      // ends the half-sent query, and the error state it may have left the backend in
      await this.db.runExclusive(() =>
        this.db.execProtocolRawStream(new Uint8Array([SYNC, 0, 0, 0, 4]), { onRawData: () => {} }),
      );
      this.midExtendedQuery = false;
    }
    if (this.db.isInTransaction()) await this.db.exec('ROLLBACK');
    this.lastConnection = undefined;
    void this.process();
  }

  private holder(): number | undefined {
    return this.midExtendedQuery || this.db.isInTransaction() ? this.lastConnection : undefined;
  }

  private next(): QueuedMessage | undefined {
    const holder = this.holder();
    if (holder === undefined) return this.queue.shift();
    const at = this.queue.findIndex((queued) => queued.connection === holder);
    return at < 0 ? undefined : this.queue.splice(at, 1)[0];
  }

  private async process(): Promise<void> {
    if (this.processing) return;
    this.processing = true;
    try {
      for (let queued = this.next(); queued; queued = this.next()) {
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(queued!.message, {
              onRawData: (data) => {
                bytes += data.length;
                queued!.onData(data);
              },
            }),
          );
        } catch (error) {
          queued.reject(error);
          continue;
        }
        const type = queued.message[0]!;
        this.lastConnection = queued.connection;
        if (EXTENDED_QUERY.has(type)) this.midExtendedQuery = true;
        else if (type === SYNC) this.midExtendedQuery = false;
        queued.resolve(bytes);
      }
    } finally {
      this.processing = false;
    }
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
