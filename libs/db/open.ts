import net from 'node:net';
import path from 'node:path';
import { type CommonConfig, withTimeout } from '../config/index.js';
import type { Logger } from '../log/index.js';
import { Database, type Queryable } from './database.js';
import { embeddedServerOf, startEmbeddedPostgres } from './embedded.js';

export interface OpenedDatabase {
  db: Database;
  /** 'postgres' when DATABASE_URL is set; otherwise whether this process serves PGlite or joined one. */
  mode: 'postgres' | 'embedded-server' | 'embedded-client';
  /** 'embedded-server': the database this process serves, reached without the socket. */
  direct?: Queryable;
  close(): Promise<void>;
}

/**
 * DATABASE_URL set: Postgres. Otherwise the embedded database: joined through its loopback port
 * when another process (say `npm start`) already serves it, else served by this process.
 */
export async function openDatabase(
  config: Pick<
    CommonConfig,
    | 'DATABASE_URL'
    | 'DATABASE_POOL_SIZE'
    | 'DATABASE_QUERY_TIMEOUT_MS'
    | 'DATABASE_STALL_MS'
    | 'DATA_DIR'
    | 'EMBEDDED_DB_PORT'
  >,
  applicationName: string,
  /** Where a Postgres outage is reported (once when it starts, once when it ends). */
  log?: Logger,
): Promise<OpenedDatabase> {
  if (config.DATABASE_URL) {
    const db = new Database(config.DATABASE_URL, {
      poolSize: config.DATABASE_POOL_SIZE,
      applicationName,
      preparedStatements: true,
      queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
      ...(log ? { stall: { waitMs: config.DATABASE_STALL_MS, log } } : {}),
    });
    return { db, mode: 'postgres', close: () => db.close() };
  }
  const host = '127.0.0.1';
  if (await isListening(host, config.EMBEDDED_DB_PORT)) {
    // Joined only when that port serves DATA_DIR: else this process would read and write another
    // directory's database while the operator thinks of theirs.
    const server = embeddedServerOf(config.DATA_DIR);
    if (server?.port !== config.EMBEDDED_DB_PORT) {
      throw new Error(
        `port ${config.EMBEDDED_DB_PORT} (EMBEDDED_DB_PORT) is in use, but not by the embedded database of ` +
          `DATA_DIR ${path.resolve(config.DATA_DIR)} (${server ? `that one is served on port ${server.port}` : 'no process serves it'}); ` +
          'set DATA_DIR to the directory the running process serves, or EMBEDDED_DB_PORT to a free port',
      );
    }
    const db = new Database(`postgres://postgres@${host}:${config.EMBEDDED_DB_PORT}/postgres`, {
      poolSize: Math.min(config.DATABASE_POOL_SIZE, 4),
      applicationName,
      queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    });
    // Something listens there: the embedded database of another process, or not (then say so
    // instead of waiting on a handshake that never comes).
    try {
      await withTimeout(db.query('SELECT 1'), JOIN_TIMEOUT_MS);
    } catch (error) {
      void db.close().catch(() => {}); // not awaited: its one client may never be released
      throw new Error(
        `port ${config.EMBEDDED_DB_PORT} (EMBEDDED_DB_PORT) is in use, but not by the embedded database ` +
          `(${(error as Error).message}); free it or set EMBEDDED_DB_PORT to a free port`,
        { cause: error },
      );
    }
    return { db, mode: 'embedded-client', close: () => db.close() };
  }
  const server = await startEmbeddedPostgres({
    dataDir: config.DATA_DIR,
    host,
    port: config.EMBEDDED_DB_PORT,
  });
  const db = new Database(server.url, {
    poolSize: config.DATABASE_POOL_SIZE,
    applicationName,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
  });
  return {
    db,
    mode: 'embedded-server',
    direct: server.direct,
    async close() {
      await db.close();
      await server.stop();
    },
  };
}

/** How long joining another process's embedded database may take before the port is judged taken. */
const JOIN_TIMEOUT_MS = 5000;

function isListening(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}
