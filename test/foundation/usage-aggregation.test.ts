import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('aggregation');
});
afterAll(() => database.drop());

describe('usage aggregation on Postgres', () => {
  it('sums exactly over [from, to), per item, with zero for items without usage', async () => {
    const insert = (item: number, key: string, quantity: string, at: string) =>
      database.db.query(
        `INSERT INTO usage_events (id, org_id, subscription_item_id, idempotency_key, quantity, occurred_at, recorded_at)
         VALUES (gen_random_uuid(), 1, $1, $2, $3, $4, now())`,
        [item, key, quantity, at],
      );
    await insert(10, 'a', '0.1', '2026-10-01T00:00:00Z'); // first instant: inside
    await insert(10, 'b', '0.2', '2026-10-31T23:59:59.999Z');
    await insert(10, 'c', '5', '2026-11-01T00:00:00Z'); // the end is excluded
    await insert(11, 'a', '123456789.12345678', '2026-10-15T12:00:00Z');
    const totals = await new PostgresUsageAggregator(database.db).totals(
      1,
      [10, 11, 12],
      new Date('2026-10-01T00:00:00Z'),
      new Date('2026-11-01T00:00:00Z'),
    );
    expect(Object.fromEntries(totals)).toEqual({
      10: '0.30000000',
      11: '123456789.12345678',
      12: '0.00000000',
    });
  });
});
