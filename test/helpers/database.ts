import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import pg from 'pg';
import { Database, type Queryable } from '../../libs/db/index.js';
import { testServices, uniqueName } from './services.js';

export interface TestDatabase {
  name: string;
  url: string;
  db: Database;
  drop(): Promise<void>;
}

/** A fresh, migrated Postgres database of this file's own (a copy of the run's template). */
export async function createTestDatabase(label = 'db'): Promise<TestDatabase> {
  const { databaseUrl, templateDatabase } = testServices();
  const name = uniqueName(label);
  await adminQuery(databaseUrl, `CREATE DATABASE "${name}" TEMPLATE "${templateDatabase}"`);
  const url = urlFor(databaseUrl, name);
  const db = new Database(url, { poolSize: 10, applicationName: 'billing-test', preparedStatements: true });
  return {
    name,
    url,
    db,
    async drop() {
      await db.close();
      await adminQuery(databaseUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

function urlFor(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * Lets `database` take connections again, or refuses new ones and ends those it has: Postgres
 * down for its clients, the server itself still up.
 */
export async function setConnectionsAllowed(database: TestDatabase, allowed: boolean): Promise<void> {
  const { databaseUrl } = testServices();
  await adminQuery(databaseUrl, `ALTER DATABASE "${database.name}" WITH ALLOW_CONNECTIONS ${allowed}`);
  if (!allowed) {
    await adminQuery(
      databaseUrl,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database.name}'`,
    );
  }
}

async function adminQuery(url: string, sql: string): Promise<void> {
  // Concurrent copies of one template can collide ("source database is being accessed"): retry.
  for (let attempt = 0; ; attempt++) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(sql);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '55006' || attempt >= 20) throw error;
    } finally {
      await client.end();
    }
    await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
  }
}

/** A statement sent through `recordingQueries`. */
export interface SentQuery {
  text: string;
  values: unknown[];
}

/** `db`, noting each statement sent through it in `sent`: to count round trips or EXPLAIN them. */
export function recordingQueries(db: Queryable, sent: SentQuery[]): Queryable {
  return {
    query: (text, values) => {
      sent.push({ text, values: values ?? [] });
      return db.query(text, values);
    },
  };
}

/**
 * Runs `work` in a transaction whose plans read each table where its rows lie, not through an
 * index (as a larger table's plans may, a bitmap scan too): a read whose order rests on an
 * index rather than on its ORDER BY shows it. Plans are made afresh (a prepared statement's
 * cached plan would keep its index).
 */
export function withoutIndexOrder<T>(db: Database, work: (tx: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query('SET LOCAL plan_cache_mode = force_custom_plan');
    await tx.query('SET LOCAL enable_indexscan = off');
    await tx.query('SET LOCAL enable_bitmapscan = off');
    return work(tx);
  });
}

/** A TCP relay to a Postgres server that a test can cut: a real lost connection, no message sent. */
export interface DatabaseRelay {
  port: number;
  /** `databaseUrl` reached through the relay. */
  url: string;
  /** Ends every relayed connection at once; the relay still takes new ones. */
  cut(): void;
  /** Cuts, then stops listening. */
  close(): Promise<void>;
}

export async function relayTo(databaseUrl: string): Promise<DatabaseRelay> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    const server = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(server).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const port = (relay.address() as AddressInfo).port;
  const relayed = new URL(databaseUrl);
  relayed.hostname = '127.0.0.1';
  relayed.port = String(port);
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    port,
    url: relayed.toString(),
    cut,
    close: async () => {
      const closed = new Promise((resolve) => relay.close(resolve));
      cut();
      await closed;
    },
  };
}
