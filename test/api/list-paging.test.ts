import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

/**
 * Every way a page is read (libs/list-pages): straight from the list index near either end, by
 * ids from an index-only scan further in, newest first in the first half and oldest first in the
 * second. Whatever the plan, a page must be exactly that slice of the list sorted created_at DESC,
 * id DESC, ties included.
 */
let api: TestApi;
let org: TestOrg;
let expected: number[];
const TOTAL = 1200;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  const other = await createTestOrg(api.platform.db);
  // three customers share each created_at, so the id tie-break decides inside every trio
  await api.platform.db.query(
    `INSERT INTO customers (org_id, name, created_at)
     SELECT $1, 'Customer ' || g, timestamptz '2026-01-01' + make_interval(mins => g / 3)
       FROM generate_series(1, $2) g`,
    [org.orgId, TOTAL],
  );
  await api.platform.db.query(
    "INSERT INTO customers (org_id, name) SELECT $1, 'Other ' || g FROM generate_series(1, 300) g",
    [other.orgId],
  );
  // index-only scans read the visibility map, as they would on a vacuumed production table
  await api.platform.db.query('VACUUM ANALYZE customers');
  const { rows } = await api.platform.db.query<{ id: number }>(
    'SELECT id FROM customers WHERE org_id = $1 ORDER BY created_at DESC, id DESC',
    [org.orgId],
  );
  expected = rows.map((r) => r.id);
});
afterAll(() => api?.close());

describe('paging a long list', () => {
  it.each([
    [0, 100], // first page, straight from the index
    [480, 100], // newest first, straight from the index
    [520, 100], // newest first, ids from an index-only scan
    [560, 100], // oldest first, ids from an index-only scan
    [700, 100], // oldest first, straight from the index
    [1100, 100], // the last full page
    [1150, 100], // a short last page
    [1199, 7], // the very last row
    [37, 1],
    [600, 25],
  ])('offset %i, limit %i is exactly that slice of the sorted list', async (offset, limit) => {
    const response = await api.request({
      path: `/customers?limit=${limit}&offset=${offset}`,
      key: org.apiKey,
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.data.map((c: { id: number }) => c.id)).toEqual(expected.slice(offset, offset + limit));
    expect(body.pagination).toEqual({ limit, offset, total: TOTAL, has_more: offset + limit < TOTAL });
  });

  it('reads the deep pages by index-only scan, as the plans show', async () => {
    const { rows } = await api.platform.db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM customers WHERE org_id = $1 ORDER BY created_at ASC, id ASC LIMIT 100 OFFSET 540`,
      [org.orgId],
    );
    expect(rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(
      /Index Only Scan Backward using customers_org_list/,
    );
  });
});
