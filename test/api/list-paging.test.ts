import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listCustomers } from '../../libs/customers/index.js';
import type { Queryable } from '../../libs/db/index.js';
import { readPage } from '../../libs/list-pages/index.js';
import { listOrganizations } from '../../libs/organizations/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { recordingQueries, type SentQuery } from '../helpers/database.js';
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

/** The test database, noting each statement sent through it. */
const recording = (sent: SentQuery[]): Queryable => recordingQueries(api.platform.db, sent);

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
    [1200, 100], // just past the end: no rows, still the list's total
    [5000, 25], // far past the end
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

  it('sends a page past the first 500 rows of either end as ids from an index-only scan, a nearer one not', async () => {
    const planOf = async (offset: number) => {
      const sent: SentQuery[] = [];
      await listCustomers(recording(sent), org.orgId, { limit: 100, offset });
      const page = sent.find((query) => /\bLIMIT \$\d+ OFFSET \$\d+/.test(query.text));
      const { rows } = await api.platform.db.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN ${page!.text}`,
        page!.values,
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    };
    const indexOnly = /Index Only Scan (Backward )?using customers_org_list/;
    expect(await planOf(520)).toMatch(indexOnly); // newest first, 520 skipped
    expect(await planOf(560)).toMatch(indexOnly); // oldest first, 540 skipped
    expect(await planOf(480)).not.toMatch(indexOnly);
    expect(await planOf(500)).not.toMatch(indexOnly); // 500 skipped: still straight from the index
    expect(await planOf(501)).toMatch(indexOnly); // the first offset past 500
    expect(await planOf(700)).not.toMatch(indexOnly); // oldest first, 400 skipped
  });

  it('reads no total for a first page that is not full: its rows are the total', async () => {
    const few = await createTestOrg(api.platform.db);
    await api.platform.db.query(
      "INSERT INTO customers (org_id, name) SELECT $1, 'Few ' || g FROM generate_series(1, 3) g",
      [few.orgId],
    );
    const sent: SentQuery[] = [];
    expect((await listCustomers(recording(sent), few.orgId, { limit: 25, offset: 0 })).total).toBe(3);
    expect(sent).toHaveLength(1);
    sent.length = 0;
    expect((await listCustomers(recording(sent), org.orgId, { limit: 25, offset: 0 })).total).toBe(TOTAL);
    expect(sent).toHaveLength(2); // a full page: the total is read
  });

  it('reads the total once for a page past the first: before the page, to plan it', async () => {
    // offset 1 is the first page past the first
    for (const offset of [1, 700]) {
      const sent: SentQuery[] = [];
      const page = await listCustomers(recording(sent), org.orgId, { limit: 100, offset });
      expect(page.total).toBe(TOTAL);
      expect(page.data.map((customer) => customer.id)).toEqual(expected.slice(offset, offset + 100));
      expect(sent, `offset ${offset}`).toHaveLength(2);
      expect(sent[0]!.text, `offset ${offset}`).not.toMatch(/\bLIMIT\b/); // the total first, then the page
      expect(sent[1]!.text).toMatch(/\bLIMIT \$\d+ OFFSET \$\d+/);
    }
  });
});

/** The offsets that take each way a page is read, for a list of TOTAL rows. */
const EVERY_PLAN: [number, number][] = [
  [0, 100],
  [520, 100],
  [560, 100],
  [700, 100],
  [1150, 100],
];

describe('paging the other lists the same way', () => {
  it('usage events, newest timestamp first: exactly each slice, ties by id', async () => {
    const owner = await createTestOrg(api.platform.db);
    // three events share each timestamp; created in the opposite order, so created_at cannot sort them
    await api.platform.db.query(
      `INSERT INTO usage_events (id, org_id, subscription_item_id, idempotency_key, quantity, occurred_at,
         recorded_at)
       SELECT gen_random_uuid(), $1, 1, 'key-' || g, 1, timestamptz '2026-01-01' + make_interval(mins => g / 3),
              timestamptz '2026-03-01' - make_interval(secs => g)
         FROM generate_series(1, $2) g`,
      [owner.orgId, TOTAL],
    );
    await api.platform.db.query('VACUUM ANALYZE usage_events');
    const { rows } = await api.platform.db.query<{ id: string }>(
      'SELECT id FROM usage_events WHERE org_id = $1 ORDER BY occurred_at DESC, id DESC',
      [owner.orgId],
    );
    for (const [offset, limit] of EVERY_PLAN) {
      const response = await api.request({
        path: `/usage/events?limit=${limit}&offset=${offset}`,
        key: owner.apiKey,
      });
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      expect(body.data.map((event: { id: string }) => event.id)).toEqual(
        rows.slice(offset, offset + limit).map((row) => row.id),
      );
      expect(body.pagination.total).toBe(TOTAL);
    }
  });

  it('webhook events and endpoints: exactly each slice', async () => {
    const owner = await createTestOrg(api.platform.db);
    const [{ id: endpointId }] = (
      await api.platform.db.query<{ id: string }>(
        `INSERT INTO webhook_endpoints (org_id, url, events, status, description, secret)
         SELECT $1, 'https://example.com/hook/' || g, '{*}', 'ACTIVE', '', 'whsec_dGVzdHNlY3JldHRlc3RzZWNyZXQ='
           FROM generate_series(1, $2) g RETURNING id`,
        [owner.orgId, TOTAL],
      )
    ).rows as [{ id: string }];
    await api.platform.db.query(
      `INSERT INTO webhook_events (org_id, endpoint_id, event_type, status, payload, created_at)
       SELECT $1, $2, 'invoice.posted', 'SUCCESS', '{}', timestamptz '2026-01-01' + make_interval(mins => g / 3)
         FROM generate_series(1, $3) g`,
      [owner.orgId, endpointId, TOTAL],
    );
    for (const [table, path] of [
      ['webhook_events', '/webhook-events'],
      ['webhook_endpoints', '/webhook-endpoints'],
    ] as const) {
      const { rows } = await api.platform.db.query<{ id: string }>(
        `SELECT id FROM ${table} WHERE org_id = $1 ORDER BY created_at DESC, id DESC`,
        [owner.orgId],
      );
      for (const [offset, limit] of EVERY_PLAN) {
        const response = await api.request({
          path: `${path}?limit=${limit}&offset=${offset}`,
          key: owner.apiKey,
        });
        expect(response.statusCode, response.body).toBe(200);
        const body = response.json();
        expect(body.data.map((row: { id: string }) => row.id)).toEqual(
          rows.slice(offset, offset + limit).map((row) => row.id),
        );
        expect(body.pagination.total).toBe(TOTAL);
      }
    }
  });

  it('a list with its own tie-breaker: exactly each slice, deep pages included', async () => {
    // credit notes order one instant's rows by number, not id; here the tie-breaker runs against
    // the ids inside every trio, so a page cut by id anywhere would take the wrong rows of a trio
    await api.platform.db.query(
      `CREATE TABLE tie_broken (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, org_id bigint NOT NULL,
         created_at timestamptz NOT NULL, seq bigint NOT NULL UNIQUE)`,
    );
    await api.platform.db.query(
      `INSERT INTO tie_broken (org_id, created_at, seq)
       SELECT $1, timestamptz '2026-01-01' + make_interval(mins => g / 3), -g FROM generate_series(1, $2) g`,
      [org.orgId, TOTAL],
    );
    const { rows } = await api.platform.db.query<{ id: number }>(
      'SELECT id FROM tie_broken WHERE org_id = $1 ORDER BY created_at DESC, seq DESC',
      [org.orgId],
    );
    for (const [offset, limit] of EVERY_PLAN) {
      const page = await readPage<{ id: number }>(
        api.platform.db,
        {
          table: 'tie_broken',
          alias: 't',
          columns: 't.id, t.created_at, t.seq',
          where: 'org_id = $1',
          values: [org.orgId],
          tieBreaker: 'seq',
        },
        { limit, offset },
      );
      expect(
        page.rows.map((row) => Number(row.id)),
        `offset ${offset}`,
      ).toEqual(rows.slice(offset, offset + limit).map((row) => Number(row.id)));
    }
  });

  it('organizations, every one of them (an operator list): exactly each slice', async () => {
    await api.platform.db.query(
      `INSERT INTO organizations (name, created_at)
       SELECT 'Tenant ' || g, timestamptz '2026-01-01' + make_interval(mins => g / 3) FROM generate_series(1, $1) g`,
      [TOTAL],
    );
    const { rows } = await api.platform.db.query<{ id: number }>(
      'SELECT id FROM organizations ORDER BY created_at DESC, id DESC',
    );
    for (const [offset, limit] of EVERY_PLAN) {
      const page = await listOrganizations(api.platform.db, { limit, offset });
      expect(page.data.map((organization) => organization.id)).toEqual(
        rows.slice(offset, offset + limit).map((row) => row.id),
      );
      expect(page.total).toBe(rows.length);
    }
  });
});
