import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { afterCommit, Database } from './database.js';

// Nothing here connects: a pool opens its connections on the first query only.
const db = new Database('postgres://billing@127.0.0.1:1/none', { preparedStatements: true });
afterAll(() => db.close());

const statementName = (database: Database, text: string) =>
  (database as unknown as { statementName(text: string): string | undefined }).statementName(text);

describe('afterCommit outside a transaction', () => {
  it('runs the hook at once for the Database itself, whose statements commit alone', () => {
    const runs: Database[] = [];
    expect(afterCommit(db, (given) => runs.push(given))).toBe(true);
    expect(runs).toEqual([db]);
  });

  it('answers true and runs the hooks after one that throws, reporting it as a warning', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      expect(
        afterCommit(db, () => {
          throw new Error('the hook fails');
        }),
      ).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => warning.name)).toEqual(['CommitHookWarning']);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('is false and runs nothing for a client this module did not open', () => {
    const runs: string[] = [];
    const foreign = { query: () => Promise.reject(new Error('not used')) } as unknown as pg.PoolClient;
    expect(afterCommit(foreign, () => runs.push('ran'))).toBe(false);
    expect(runs).toEqual([]);
  });
});

describe('prepared statement names', () => {
  it('names each distinct text once, in order, and stops naming at 1000 texts', () => {
    const many = new Database('postgres://billing@127.0.0.1:1/none', { preparedStatements: true });
    try {
      expect(statementName(many, 'SELECT $1')).toBe('billing_1');
      expect(statementName(many, 'SELECT $2')).toBe('billing_2');
      expect(statementName(many, 'SELECT $1')).toBe('billing_1');
      for (let i = 3; i <= 1000; i++) statementName(many, `SELECT ${i}`);
      expect(statementName(many, 'SELECT 1000')).toBe('billing_1000');
      // past the bound a text runs unnamed, and the named ones keep their names
      expect(statementName(many, 'SELECT 1001')).toBeUndefined();
      expect(statementName(many, 'SELECT $2')).toBe('billing_2');
    } finally {
      void many.close();
    }
  });

  it('names nothing without preparedStatements', () => {
    const plain = new Database('postgres://billing@127.0.0.1:1/none');
    try {
      expect(statementName(plain, 'SELECT $1')).toBeUndefined();
    } finally {
      void plain.close();
    }
  });
});

describe('type parsers', () => {
  const types = (db.pool as unknown as { options: { types: pg.CustomTypesConfig } }).options.types;

  it('reads int8 as a number and DATE as its plain text, other types as pg does', () => {
    expect(types.getTypeParser(20, 'text')('9007199254740991')).toBe(9007199254740991);
    expect(types.getTypeParser(1082, 'text')('2026-02-28')).toBe('2026-02-28');
    // NUMERIC stays its exact text; int4 is pg's own number
    expect(types.getTypeParser(1700, 'text')('0.10000000')).toBe('0.10000000');
    expect(types.getTypeParser(23, 'text')('42')).toBe(42);
    // a binary int4 is read by pg's binary parser
    expect(types.getTypeParser(23, 'binary')(Buffer.from([0, 0, 0, 42]) as unknown as string)).toBe(42);
  });
});

describe('connection settings', () => {
  const options = (database: Database) =>
    database.pool.options as unknown as { connectionTimeoutMillis: number; keepAlive: boolean };

  it('waits 10 s for a connection unless told otherwise, and keeps its connections alive over TCP', () => {
    expect(options(db)).toMatchObject({ connectionTimeoutMillis: 10_000, keepAlive: true });
    const quick = new Database('postgres://billing@127.0.0.1:1/none', { connectTimeoutMs: 300 });
    try {
      expect(options(quick)).toMatchObject({ connectionTimeoutMillis: 300, keepAlive: true });
    } finally {
      void quick.close();
    }
  });
});
