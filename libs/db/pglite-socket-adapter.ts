import { createServer, type Server } from 'node:net';
import { type PGlite, parse, protocol, type Results, types } from '@electric-sql/pglite';
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from '@electric-sql/pglite-socket';
import type { QueryResult, QueryResultRow } from 'pg';
import type { Queryable } from './database.js';

/**
 * The one place that works around pglite-socket (pinned at exactly 0.2.17 in package.json).
 *
 * pglite-socket feeds every connection's protocol messages to PGlite's single backend through one
 * queue, which keeps a connection's turn only inside a transaction. Between an extended-query
 * message and its Sync another connection's Parse ran, so a Bind met the other's unnamed
 * statement ("bind message supplies 2 parameters, but prepared statement \"\" requires 4") and a
 * read failed with a 500 now and then; and one failed message stalled the queue for good.
 * Upstream: https://github.com/electric-sql/pglite/issues/1046 (open; fix proposed in
 * https://github.com/electric-sql/pglite/pull/977).
 *
 * Through its public API only: `PGLiteSocketHandler` (exported) speaks the wire protocol of one
 * connection and takes its queue as a constructor option; this file serves connections with it
 * and gives each the queue below. The queue's type is not exported, hence one cast.
 * pglite-socket-adapter.test.ts fails loudly if the pinned version or that contract changes.
 */
export async function servePglite(
  db: PGlite,
  options: { host: string; port: number; maxConnections: number },
): Promise<{ stop(): Promise<void>; direct: Queryable }> {
  await db.waitReady;
  const turns = new ConnectionTurns(db);
  const handlers = new Set<PGLiteSocketHandler>();
  const server: Server = createServer((socket) => {
    if (handlers.size >= options.maxConnections) {
      socket.end();
      return;
    }
    const handler = new PGLiteSocketHandler({
      queryQueue: turns as unknown as PGLiteSocketHandlerOptions['queryQueue'],
      closeOnDetach: true,
    });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener('close', forget);
    handler.addEventListener('error', forget);
    handler.attach(socket).catch(() => {
      forget();
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    direct: directQueryable(db, turns),
    async stop() {
      await Promise.all([...handlers].map((handler) => handler.detach(true)));
      handlers.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface QueuedMessage {
  connection: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (error: unknown) => void;
}

/** A statement of this process, run on the backend itself in the connections' queue (`ConnectionTurns.run`). */
interface QueuedStatement {
  connection: typeof IN_PROCESS;
  run: () => Promise<void>;
}

/** The queue's name for this process's own statements: no socket connection has it. */
const IN_PROCESS = -1;

/**
 * The embedded database for the process that serves it, without the loopback socket: each query is
 * one statement of its own (autocommit), run in the connections' queue when no connection holds
 * the backend (inside a transaction, or between Parse and Sync), so it never joins or splits
 * another connection's work. The same commit as over the socket, without `pg`'s and the socket's
 * work both ways (the in-process usage log writes through it: docs/decisions.md). Rows are typed as
 * `Database` types them: int8 as numbers, DATE and NUMERIC as text.
 *
 * Each statement text is prepared once under a name of its own (`PreparedStatements`) and then
 * sent as one protocol message run (Bind, Describe, Execute, Sync) through PGlite's public
 * `execProtocolStream` (its `execProtocol` hands the replies to whichever socket connection ran
 * last): PGlite's `query` parses and plans it again and enters the backend six times per
 * call (docs/decisions.md, "The embedded log's statements are prepared once").
 */
function directQueryable(db: PGlite, turns: ConnectionTurns): Queryable {
  const statements = new PreparedStatements(db);
  return {
    query<R extends QueryResultRow>(text: string, values: unknown[] = []): Promise<QueryResult<R>> {
      return turns.run(async () => {
        const result = await statements.run<R>(text, values);
        return {
          rows: result.rows,
          rowCount: result.affectedRows ?? result.rows.length,
          command: '',
          oid: 0,
          fields: [],
        };
      });
    },
  };
}

/**
 * Named prepared statements of this process on PGlite's one session, which every socket connection
 * shares: the names carry a prefix no client of ours uses. A statement another connection dropped
 * (`DEALLOCATE ALL`, `DISCARD ALL`) or whose plan a migration invalidated fails at Bind, before
 * anything ran; it is prepared again and the call repeated once. Distinct texts beyond
 * `maxStatements` run unprepared, so a caller that builds texts cannot fill the session.
 */
export class PreparedStatements {
  private readonly prepared = new Map<string, { name: string; paramTypes: number[] }>();
  private count = 0;

  constructor(
    private readonly db: PGlite,
    private readonly maxStatements = 64,
  ) {}

  async run<R>(text: string, values: unknown[]): Promise<Results<R>> {
    if (!this.prepared.has(text) && this.prepared.size >= this.maxStatements) {
      return this.db.query<R>(text, values, { parsers: PARSERS });
    }
    try {
      return await this.execute<R>(text, values);
    } catch (error) {
      const gone = this.prepared.get(text);
      if (!gone || !isGoneStatement(error)) throw error;
      await this.prepare(text, gone.name);
      return this.execute<R>(text, values);
    }
  }

  private async execute<R>(text: string, values: unknown[]): Promise<Results<R>> {
    const statement = this.prepared.get(text) ?? (await this.prepare(text, `billing_direct_${++this.count}`));
    const serializers = this.db.serializers;
    const serialized = values.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serialize = serializers[statement.paramTypes[i]!];
      return serialize ? serialize(value) : String(value);
    });
    const messages = await this.db.runExclusive(() =>
      this.db.execProtocolStream(
        concat([
          serialize.bind({ statement: statement.name, values: serialized }),
          serialize.describe({ type: 'P' }),
          serialize.execute({}),
          serialize.sync(),
        ]),
      ),
    );
    return parse.parseResults(messages, this.db.parsers, { parsers: PARSERS })[0] as Results<R>;
  }

  /** Prepares `text` under `name`, in place of whatever had that name. */
  private async prepare(text: string, name: string): Promise<{ name: string; paramTypes: number[] }> {
    const messages = await this.db.runExclusive(() =>
      this.db.execProtocolStream(
        concat([
          serialize.close({ type: 'S', name }),
          serialize.parse({ name, text }),
          serialize.describe({ type: 'S', name }),
          serialize.sync(),
        ]),
      ),
    );
    const statement = { name, paramTypes: parse.parseDescribeStatementResults(messages) };
    this.prepared.set(text, statement);
    return statement;
  }
}

/** SQLSTATE 26000 (no such prepared statement) and 0A000 (a cached plan's result type changed). */
function isGoneStatement(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '26000' || code === '0A000';
}

function concat(parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

const { serialize } = protocol;

const PARSERS = {
  [types.INT8]: (value: string) => Number(value),
  [types.DATE]: (value: string) => value,
  [types.NUMERIC]: (value: string) => value,
};

/** Extended-query messages before the Sync that ends them: Parse, Bind, Describe, Execute, Close, Flush. */
const EXTENDED_QUERY = new Set(['P', 'B', 'D', 'E', 'C', 'H'].map((type) => type.charCodeAt(0)));
const SYNC = 'S'.charCodeAt(0);

/**
 * The queue of protocol messages the connections feed PGlite's single backend (the interface
 * pglite-socket's handlers call). One connection holds the backend, and the others' messages
 * wait, while that connection is
 * - inside a transaction (as pglite-socket's queue did), or
 * - between an extended-query message and its Sync. pglite-socket's queue let another
 *   connection's Parse run between one connection's Parse and Bind; the Bind then met the other's
 *   unnamed statement ("bind message supplies 2 parameters, but prepared statement "" requires 4")
 *   and a read failed with a 500 now and then.
 * A message that fails is answered with its error and the queue goes on (pglite-socket's stalled).
 */
export class ConnectionTurns {
  private queue: (QueuedMessage | QueuedStatement)[] = [];
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

  /**
   * Runs `statement` (one autocommit statement of this process, through PGlite's own API) when no
   * connection holds the backend, in queue order with the connections' messages.
   */
  run<T>(statement: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ connection: IN_PROCESS, run: () => statement().then(resolve, reject) });
      void this.process();
    });
  }

  getQueueLength(): number {
    return this.queue.length;
  }

  /** The connection closed: its queued messages will never run. */
  clearQueueForHandler(connection: number): void {
    this.queue = this.queue.filter((queued) => {
      if (queued.connection !== connection || 'run' in queued) return true;
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

  private next(): QueuedMessage | QueuedStatement | undefined {
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
        if ('run' in queued) {
          // whole in itself: it ends in a Sync, outside any transaction, whether it fails or not;
          // no connection that closes meanwhile is taken for the backend's holder
          this.lastConnection = IN_PROCESS;
          this.midExtendedQuery = false;
          await queued.run();
          continue;
        }
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
          (queued as QueuedMessage).reject(error);
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
