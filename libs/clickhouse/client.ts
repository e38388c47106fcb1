import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';

/**
 * The few ClickHouse operations this code base needs, in a form that works on ClickHouse 18.16
 * (Debian's, used in tests) and on current releases: no query parameters (18.16 rejects the
 * `param_*` settings; callers inline validated numbers only), data in TabSeparated (18.16 parses
 * Decimal exactly from text) or RowBinary, results in JSONEachRow.
 */
export interface ClickHouse {
  readonly database: string;
  /** DDL and other statements without a result. */
  command(sql: string): Promise<void>;
  rows<T>(sql: string): Promise<T[]>;
  /** Inserts rows already encoded as TabSeparated lines (see tabSeparatedRow). */
  insertTabSeparated(table: string, columns: readonly string[], lines: string): Promise<void>;
  /** Inserts rows already encoded in RowBinary (see RowBinaryWriter), in the order of `columns`. */
  insertRowBinary(table: string, columns: readonly string[], rows: Buffer): Promise<void>;
  close(): Promise<void>;
}

export function openClickHouse(options: { url: string; database: string }): ClickHouse {
  const client = createClient({
    url: options.url,
    request_timeout: 30_000,
    // Errors are thrown to the caller, which decides what to log.
    log: { level: ClickHouseLogLevel.OFF },
  });
  return {
    database: options.database,
    async command(sql) {
      await client.command({ query: sql });
    },
    async rows<T>(sql: string) {
      const result = await client.query({ query: sql, format: 'JSONEachRow' });
      return result.json<T>();
    },
    async insertTabSeparated(table, columns, lines) {
      await client.insert({
        table,
        columns: [...columns] as [string, ...string[]],
        format: 'TabSeparated',
        values: Readable.from([Buffer.from(lines)], { objectMode: false }),
      });
    },
    async insertRowBinary(table, columns, rows) {
      // `insert` has no RowBinary; `exec` sends the statement with the rows as the request's body
      const { stream } = await client.exec({
        query: `INSERT INTO ${table} (${columns.join(', ')}) FORMAT RowBinary`,
        values: Readable.from([rows], { objectMode: false }),
      });
      stream.resume();
      await finished(stream);
    },
    close: () => client.close(),
  };
}
