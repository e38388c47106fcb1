import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClickHouse,
  openClickHouse,
  RowBinaryWriter,
  tabSeparatedRow,
} from '../../libs/clickhouse/index.js';
import { testServices, uniqueName } from '../helpers/services.js';

/** The two insert formats, read back by the ClickHouse of the tests (18.16 included). */
describe('RowBinary and TabSeparated rows, as ClickHouse reads them', () => {
  const database = uniqueName('ch_formats');
  let clickhouse: ClickHouse;
  const columns = ['n', 'u16', 'u32', 'u64', 'id', 'amount', 'at', 'key'];
  type Row = [
    n: number,
    u16: number,
    u32: number,
    u64: number,
    id: string,
    amount: string,
    at: number,
    key: string,
  ];
  // DateTime as TabSeparated text is 10 digits of unix time (18.16): the instants here have 10
  const rows: Row[] = [
    [1, 65_535, 4_294_967_295, 2 ** 53 - 1, '00112233-4455-6677-8899-aabbccddeeff', '0.00000001', 1e9, ''],
    [
      2,
      0,
      1_764_201_600,
      2 ** 32 + 5,
      'f47ac10b-58cc-4372-a567-0e02b2c3d479',
      '99999999.99999999',
      1_764_201_600,
      'clé 数量 🚀',
    ],
    [
      3,
      258,
      7,
      0,
      '00000000-0000-0000-0000-000000000001',
      '184467440737.09551616',
      4_102_444_799,
      'a\tb\nc\\d\re',
    ],
    [
      4,
      1,
      1,
      1,
      'ffffffff-ffff-ffff-ffff-ffffffffffff',
      '999999999999999999999999999999.99999999',
      1.7e9,
      'x'.repeat(300),
    ],
  ];

  beforeAll(async () => {
    clickhouse = openClickHouse({ url: testServices().clickhouseUrl, database });
    await clickhouse.command(`CREATE DATABASE ${database}`);
    expect(clickhouse.database).toBe(database);
    // The table's columns in another order than the inserts name them: each value goes by name.
    for (const table of ['binary', 'text']) {
      await clickhouse.command(
        `CREATE TABLE ${database}.${table} (key String, at DateTime, amount Decimal(38, 8), id UUID,
           u64 UInt64, u32 UInt32, u16 UInt16, n UInt8) ENGINE = Memory`,
      );
    }
  });
  afterAll(async () => {
    await clickhouse?.command(`DROP DATABASE IF EXISTS ${database}`);
    await clickhouse?.close();
  });

  const read = (table: string) =>
    clickhouse.rows<Record<string, string>>(
      `SELECT n, u16, u32, toString(u64) AS u64, toString(id) AS id, toString(amount) AS amount,
              toString(toUInt32(at)) AS at, key
         FROM ${database}.${table} ORDER BY n`,
    );
  const expected = rows.map(([n, u16, u32, u64, id, amount, at, key]) => ({
    n,
    u16,
    u32,
    u64: String(u64),
    id,
    amount,
    at: String(at),
    key,
  }));

  it('reads every column of RowBinary back as written, and the rows as soon as the insert returns', async () => {
    const writer = new RowBinaryWriter(8);
    for (const [n, u16, u32, u64, id, amount, at, key] of rows) {
      writer
        .uint8(n)
        .uint16(u16)
        .uint32(u32)
        .uint64(u64)
        .uuid(id)
        .decimal128(amount, 8)
        .uint32(at)
        .string(key);
    }
    await clickhouse.insertRowBinary(`${database}.binary`, columns, writer.bytes());
    expect(
      (await read('binary')).map((row) => ({
        ...row,
        n: Number(row.n),
        u16: Number(row.u16),
        u32: Number(row.u32),
      })),
    ).toEqual(expected);
  });

  it('reads TabSeparated lines back as written, tabs, newlines and backslashes in a key included', async () => {
    const lines = rows.map(([n, u16, u32, u64, id, amount, at, key]) =>
      tabSeparatedRow([n, u16, u32, u64, id, amount, at, key]),
    );
    await clickhouse.insertTabSeparated(`${database}.text`, columns, lines.join(''));
    expect(
      (await read('text')).map((row) => ({
        ...row,
        n: Number(row.n),
        u16: Number(row.u16),
        u32: Number(row.u32),
      })),
    ).toEqual(expected);
  });
});
