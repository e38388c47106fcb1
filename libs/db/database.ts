import pg from 'pg';
import { DependencyGuard } from '../dependency-guard/index.js';
import type { Logger } from '../log/index.js';
import { isConnectionFailure } from './pg-errors.js';

/** Anything that runs SQL: the pool or a client inside a transaction. Domain code takes this. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

export interface TransactionOptions {
  readOnly?: boolean;
  isolation?: 'read committed' | 'repeatable read' | 'serializable';
}

const MAX_NAMED_STATEMENTS = 1000;

/** How long notify() folds further calls for a channel into one NOTIFY. */
const NOTIFY_WINDOW_MS = 10;

/** What runs once a transaction has committed, by the client its code was given (see afterCommit). */
const commitHooks = new WeakMap<object, Set<(db: Database) => void>>();

/**
 * Runs `hook` once the work done through `queryable` is committed: after the COMMIT of the
 * transaction whose client it is, at once for the Database itself (each of its statements commits
 * alone). A hook given twice in one transaction runs once. False for a client this module did not
 * open: the caller then does without. Nothing runs for a transaction that rolls back. A hook that
 * throws does not fail the committed work (see runCommitHooks).
 */
export function afterCommit(queryable: Queryable, hook: (db: Database) => void): boolean {
  if (queryable instanceof Database) {
    runCommitHooks([hook], queryable);
    return true;
  }
  const hooks = commitHooks.get(queryable);
  hooks?.add(hook);
  return hooks !== undefined;
}
const INT8_OID = 20;
const DATE_OID = 1082;

/**
 * Type parsers for this code base: ids and counts (int8) as numbers (they stay far below 2^53),
 * DATE as the plain 'YYYY-MM-DD' text (never a local-time Date), NUMERIC as its exact text.
 */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return (value: string) => Number(value);
    if (oid === DATE_OID) return (value: string) => value;
    return pg.types.getTypeParser(oid, format);
  },
};

/** How long a query waits for a connection: to be made, or to be free in a busy pool. */
const CONNECT_TIMEOUT_MS = 10_000;

/** A pg pool with the two helpers every caller needs. Same code for Postgres and embedded PGlite. */
export class Database implements Queryable {
  readonly pool: pg.Pool;

  /** Statement names by SQL text, while preparedStatements is on (see the constructor). */
  private readonly statementNames: Map<string, string> | undefined;

  /**
   * `preparedStatements`: each distinct SQL text of query(), and of a transaction's statements,
   * becomes a named statement, parsed and
   * planned once per connection instead of on every call (parsing and planning are most of
   * Postgres's work for a primary-key lookup). Only for Postgres itself: the embedded PGlite serves every connection from
   * ONE backend, where two connections preparing one name would collide. Texts are parameterized
   * everywhere, so their number is bounded; past MAX_NAMED_STATEMENTS, texts run unnamed. A
   * call without values is never named: its text may hold several statements.
   */
  constructor(
    connectionString: string,
    options: {
      poolSize?: number;
      applicationName?: string;
      preparedStatements?: boolean;
      connectTimeoutMs?: number;
      /** The longest one statement may run; past it the query fails and its connection is dropped. */
      queryTimeoutMs?: number;
      /**
       * Stall detection (services on Postgres): a statement or transaction that waits past
       * `waitMs` has the database probed on a connection of its own; if the probe gets no answer
       * either, the database is down: every waiting statement fails at once (its connection is
       * dropped, so a stuck transaction can never commit later) and new ones are refused until it
       * answers again. A slow statement on a database that answers keeps running.
       */
      stall?: { waitMs: number; log: Logger };
    } = {},
  ) {
    this.statementNames = options.preparedStatements ? new Map() : undefined;
    this.pool = new pg.Pool({
      connectionString,
      max: options.poolSize ?? 10,
      types,
      application_name: options.applicationName ?? 'billing',
      idleTimeoutMillis: 30_000,
      // Without a limit, a Postgres that accepts connections but never answers (or a pool that
      // never frees a connection) would hold every request forever; past it the query fails, and
      // the api answers 503 with Retry-After.
      connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
      // A server host that vanished without a reset is found by TCP keepalive, not never.
      keepAlive: true,
      // A server that stopped answering (frozen, partitioned) fails each query within this, and
      // pg-pool drops a connection whose query failed, instead of every request waiting for TCP
      // keepalive (minutes) or forever.
      ...(options.queryTimeoutMs ? { query_timeout: options.queryTimeoutMs } : {}),
    });
    // An idle client whose server went away must not crash the process; the next query reports it.
    this.pool.on('error', () => {});
    const { stall } = options;
    this.guard = stall
      ? new DependencyGuard({
          name: 'database',
          label: 'The database',
          waitMs: stall.waitMs,
          whenSlow: 'probe',
          probe: () => this.probe(connectionString, stall.waitMs),
          isOutage: isConnectionFailure,
          log: stall.log,
        })
      : undefined;
  }

  private readonly guard: DependencyGuard | undefined;

  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    // Without values the text may hold several statements, which only the simple protocol runs.
    const config = values === undefined ? { text } : { text, values, name: this.statementName(text) };
    if (!this.guard) return this.pool.query<R>(config);
    return this.withClient(async (client, release) => {
      try {
        const result = await client.query<R>(config);
        release();
        return result;
      } catch (error) {
        // As pool.query does: a connection whose statement failed is not trusted again.
        release(error as Error);
        throw error;
      }
    });
  }

  /**
   * `use` on a pooled connection, under the stall guard. `use` gives the connection back through
   * `release` (with an error: dropped); a call given up on drops it at once (its statement may be
   * stuck on it), and a later release is a no-op.
   */
  private withClient<T>(
    use: (client: pg.PoolClient, release: (broken?: Error) => void) => Promise<T>,
  ): Promise<T> {
    let client: pg.PoolClient | undefined;
    let released = false;
    let abandoned = false;
    // A connection lost while checked out makes pg emit 'error' on the client, and an 'error'
    // nobody listens to crashes the process; the statement on it fails on its own.
    const ignoreLostConnection = () => {};
    const release = (broken?: Error) => {
      if (released || !client) return;
      released = true;
      client.off('error', ignoreLostConnection);
      client.release(broken);
    };
    const gaveUp = () => new Error('abandoned: the database stopped answering');
    return this.guard!.run(
      async () => {
        client = await this.pool.connect();
        client.on('error', ignoreLostConnection);
        if (abandoned) {
          release(gaveUp());
          throw gaveUp();
        }
        return use(client, release);
      },
      () => {
        abandoned = true;
        release(gaveUp());
      },
    );
  }

  /** Does the server answer at all? A connection of its own: the pool's may all be stuck. */
  private async probe(connectionString: string, timeoutMs: number): Promise<void> {
    const client = new pg.Client({
      connectionString,
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
    });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
    } finally {
      void client.end().catch(() => {});
    }
  }

  /**
   * The client as a transaction's code sees it: a parameterized `query(text, values)` runs as the
   * named statement of its text, as query() does; queries run one after the other, so domain code
   * may start several at once (Promise.all) on a pool or a transaction alike (pg runs one at a time
   * on a client, and will stop queueing them itself); everything else is the client's own.
   */
  private transactionClient(client: pg.PoolClient): pg.PoolClient {
    let tail: Promise<unknown> = Promise.resolve();
    const run = (...args: unknown[]): Promise<unknown> => {
      const [text, values] = args;
      const name = typeof text === 'string' && Array.isArray(values) ? this.statementName(text) : undefined;
      if (name === undefined) return (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
      return client.query({ name, text: text as string, values: values as unknown[] });
    };
    const query = (...args: unknown[]) => {
      const result = tail.then(() => run(...args));
      tail = result.catch(() => undefined);
      return result;
    };
    return new Proxy(client, {
      get(target, property) {
        if (property === 'query') return query;
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  private statementName(text: string): string | undefined {
    const names = this.statementNames;
    if (!names) return undefined;
    let name = names.get(text);
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) {
      name = `billing_${names.size + 1}`;
      names.set(text, name);
    }
    return name;
  }

  /** Runs fn in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: pg.PoolClient) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    if (!this.guard) {
      return this.pool
        .connect()
        .then((client) => this.inTransaction(client, fn, options, (broken) => client.release(broken)));
    }
    return this.withClient((client, release) => this.inTransaction(client, fn, options, release));
  }

  /** Gives the connection back through `release`: dropped when its rollback failed or its statement timed out. */
  private async inTransaction<T>(
    client: pg.PoolClient,
    fn: (tx: pg.PoolClient) => Promise<T>,
    options: TransactionOptions,
    release: (broken?: Error) => void,
  ): Promise<T> {
    // A connection lost between two statements makes pg emit 'error' on the checked-out client,
    // and an 'error' nobody listens to crashes the process. With a listener the next statement
    // fails instead, the transaction rolls back as usual, and release() drops the broken client.
    const ignoreLostConnection = () => {};
    client.on('error', ignoreLostConnection);
    // Set when the connection cannot be trusted any more: release() then drops it from the pool.
    let broken: Error | undefined;
    let result: T;
    const hooks = new Set<(db: Database) => void>();
    try {
      const modes = [
        options.isolation ? `ISOLATION LEVEL ${options.isolation.toUpperCase()}` : '',
        options.readOnly ? 'READ ONLY' : '',
      ]
        .filter(Boolean)
        .join(' ');
      await client.query(`BEGIN ${modes}`);
      const tx = this.transactionClient(client);
      commitHooks.set(tx, hooks);
      result = await fn(tx);
      await client.query('COMMIT');
      commitHooks.delete(tx);
    } catch (error) {
      // A statement past the query timeout may still run on this connection: a ROLLBACK would wait
      // behind it. Dropping the connection ends the transaction on the server instead.
      broken = isQueryTimeout(error) ? error : await rollback(client);
      throw error;
    } finally {
      client.off('error', ignoreLostConnection);
      release(broken);
    }
    runCommitHooks(hooks, this);
    return result;
  }

  /**
   * NOTIFY `channel` on a connection of the pool, outside any transaction: a NOTIFY inside a
   * transaction that writes holds a cluster-wide lock through its commit's WAL flush, so every
   * notifying commit would wait for the one before it. The first call sends at once; calls within
   * the next NOTIFY_WINDOW_MS fold into one NOTIFY at its end (a listener woken by the first may
   * have looked before their commits): a busy api sends a few a second, not one per write.
   * Best effort: a listener must also poll, and a failure is dropped.
   */
  notify(channel: string): void {
    const window = this.notifyWindows.get(channel);
    if (window) {
      window.again = true;
      return;
    }
    const send = (): void => {
      void this.query('SELECT pg_notify($1, $2)', [channel, '']).catch(() => undefined);
      const opened = { again: false };
      this.notifyWindows.set(channel, opened);
      setTimeout(() => {
        this.notifyWindows.delete(channel);
        if (opened.again) send();
      }, NOTIFY_WINDOW_MS).unref();
    };
    send();
  }

  private readonly notifyWindows = new Map<string, { again: boolean }>();

  async close(): Promise<void> {
    this.guard?.close();
    await this.pool.end();
  }
}

/**
 * Runs every hook of a committed transaction. A hook that throws is reported as a process warning
 * and the others still run: the transaction has committed, and answering its caller with an error
 * would invite a retry that writes it twice.
 */
function runCommitHooks(hooks: Iterable<(db: Database) => void>, db: Database): void {
  for (const hook of hooks) {
    try {
      hook(db);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      process.emitWarning(`a commit hook failed: ${message}`, { type: 'CommitHookWarning' });
    }
  }
}

/** Undefined once rolled back; the error when even that failed (the connection is not reusable). */
function rollback(client: pg.PoolClient): Promise<Error | undefined> {
  return client.query('ROLLBACK').then(
    () => undefined,
    (failed: Error) => failed,
  );
}

/** pg's error for a query past `query_timeout` (it has no code). */
function isQueryTimeout(error: unknown): error is Error {
  return error instanceof Error && error.message === 'Query read timeout';
}
