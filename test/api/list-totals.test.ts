import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, MIGRATIONS_DIR, migrate, type Queryable } from '../../libs/db/index.js';
import { type ListTotalKey, ListTotalReader, listTotal } from '../../libs/list-pages/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { testServices, uniqueName } from '../helpers/services.js';

/**
 * list_totals (migration 003_list_totals) must equal count(*) for every organization, list,
 * customer and status after any write: the public lists report it as `pagination.total`.
 */
let database: TestDatabase;
let db: Database;
let orgId: number;
let customers: number[];
let subscriptionOf: Map<number, number>;
let periods = 0;

/** Every key whose kept total differs from a count of the rows, for the three lists. */
async function mismatches(queryable: Queryable): Promise<unknown[]> {
  const { rows } = await queryable.query(`
    WITH counted AS (
      SELECT org_id, 'invoices' AS list, k.customer_id, k.status, count(*) AS n
        FROM invoices CROSS JOIN LATERAL list_total_keys(customer_id, status) k GROUP BY 1, 2, 3, 4
      UNION ALL
      SELECT org_id, 'subscriptions', k.customer_id, k.status, count(*)
        FROM subscriptions CROSS JOIN LATERAL list_total_keys(customer_id, status) k GROUP BY 1, 2, 3, 4
      UNION ALL
      SELECT org_id, 'customers', 0, '', count(*) FROM customers GROUP BY 1
    )
    SELECT coalesce(c.org_id, t.org_id) AS org_id, coalesce(c.list, t.list) AS list,
           coalesce(c.customer_id, t.customer_id) AS customer_id, coalesce(c.status, t.status) AS status,
           coalesce(c.n, 0) AS counted, coalesce(t.total, 0) AS kept
      FROM counted c
      FULL JOIN list_totals t USING (org_id, list, customer_id, status)
     WHERE coalesce(c.n, 0) <> coalesce(t.total, 0)`);
  return rows;
}

async function insertInvoices(
  queryable: Queryable,
  customerIds: number[],
  status = 'DRAFT',
): Promise<string[]> {
  const { rows } = await queryable.query<{ id: string }>(
    `INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start,
       period_end, due_date, status, currency)
     SELECT $1, 'T-' || $4::int || '-' || n, c.customer_id, c.subscription_id, '2026-01-01',
            '2000-01-01'::date + ($4::int * 1000 + n)::int, '2026-01-31', '2026-01-31', $3, 'CAD'
       FROM unnest($2::bigint[], $5::bigint[]) WITH ORDINALITY AS c(customer_id, subscription_id, n)
     RETURNING id`,
    [orgId, customerIds, status, ++periods, customerIds.map((c) => subscriptionOf.get(c))],
  );
  return rows.map((r) => r.id);
}

beforeAll(async () => {
  database = await createTestDatabase('totals');
  db = database.db;
  const other = await db.query<{ id: number }>(
    "INSERT INTO organizations (name) VALUES ('Other') RETURNING id",
  );
  orgId = (await db.query<{ id: number }>("INSERT INTO organizations (name) VALUES ('Org') RETURNING id"))
    .rows[0]!.id;
  for (const org of [orgId, other.rows[0]!.id]) {
    await db.query(
      "INSERT INTO customers (org_id, name) SELECT $1, 'Customer ' || g FROM generate_series(1, 5) g",
      [org],
    );
  }
  customers = (
    await db.query<{ id: number }>('SELECT id FROM customers WHERE org_id = $1 ORDER BY id', [orgId])
  ).rows.map((r) => r.id);
  await db.query(
    `INSERT INTO subscriptions (org_id, customer_id, status, start_date, next_billing_date, billing_period,
       billing_anchor_day, current_period_start, current_period_end)
     SELECT org_id, id, 'active', now(), now(), 'monthly', 1, now(), now() FROM customers`,
  );
  subscriptionOf = new Map(
    (
      await db.query<{ customer_id: number; id: number }>(
        'SELECT customer_id, id FROM subscriptions WHERE org_id = $1',
        [orgId],
      )
    ).rows.map((r) => [r.customer_id, r.id]),
  );
});
afterAll(() => database?.drop());

describe('list totals kept by triggers', () => {
  it('count multi-row inserts, key changes and deletes exactly, ignoring other updates', async () => {
    expect(await listTotal(db, { orgId, list: 'customers' })).toBe(5);
    expect(await listTotal(db, { orgId, list: 'subscriptions', status: 'active' })).toBe(5);

    const ids = await insertInvoices(db, [customers[0]!, customers[0]!, customers[1]!, customers[2]!]);
    expect(await listTotal(db, { orgId, list: 'invoices' })).toBe(4);
    expect(await listTotal(db, { orgId, list: 'invoices', customerId: customers[0] })).toBe(2);

    await db.query("UPDATE invoices SET status = 'POSTED' WHERE id = ANY($1)", [ids.slice(0, 3)]);
    await db.query('UPDATE invoices SET customer_id = $2, subscription_id = $3 WHERE id = $1', [
      ids[3],
      customers[1],
      subscriptionOf.get(customers[1]!),
    ]);
    await db.query('UPDATE invoices SET total = 10, amount_paid = 5 WHERE org_id = $1', [orgId]);
    await db.query("UPDATE subscriptions SET status = 'canceled' WHERE customer_id = $1", [customers[4]]);
    expect(await listTotal(db, { orgId, list: 'invoices', status: 'POSTED' })).toBe(3);
    expect(await listTotal(db, { orgId, list: 'invoices', customerId: customers[1], status: 'DRAFT' })).toBe(
      1,
    );
    expect(await listTotal(db, { orgId, list: 'invoices', customerId: customers[2] })).toBe(0);
    expect(await listTotal(db, { orgId, list: 'subscriptions', status: 'canceled' })).toBe(1);

    await db.query('DELETE FROM invoices WHERE id = $1', [ids[0]]);
    expect(await listTotal(db, { orgId, list: 'invoices' })).toBe(3);
    expect(await mismatches(db)).toEqual([]);
  });

  it('are read for concurrent requests in one query by ListTotalReader, each its own key', async () => {
    let queries = 0;
    const reader = new ListTotalReader({
      query: (text, values) => {
        queries++;
        return db.query(text, values);
      },
    });
    const keys: ListTotalKey[] = [
      { orgId, list: 'invoices' },
      { orgId, list: 'invoices', status: 'POSTED' },
      { orgId, list: 'invoices', customerId: customers[1] },
      { orgId, list: 'customers' },
      { orgId, list: 'subscriptions', status: 'canceled' },
      { orgId: orgId + 1_000_000, list: 'invoices' }, // no such organization: 0
    ];
    const read = await Promise.all(keys.map((key) => reader.total(key)));
    expect(queries).toBe(1);
    expect(read).toEqual(await Promise.all(keys.map((key) => listTotal(db, key))));
    expect(read.at(-1)).toBe(0);
  });

  it('forget what a rolled-back transaction or savepoint did', async () => {
    const before = await listTotal(db, { orgId, list: 'invoices' });
    await expect(
      db.transaction(async (tx) => {
        await insertInvoices(tx, [customers[3]!]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await db.transaction(async (tx) => {
      await insertInvoices(tx, [customers[3]!]);
      await tx.query('SAVEPOINT s');
      await insertInvoices(tx, [customers[3]!, customers[3]!]);
      await tx.query('ROLLBACK TO SAVEPOINT s');
    });
    expect(await listTotal(db, { orgId, list: 'invoices' })).toBe(before + 1);
    expect(await mismatches(db)).toEqual([]);
    const leftovers = await db.query(
      'SELECT (SELECT count(*) FROM list_total_changes) + (SELECT count(*) FROM list_total_pending) AS n',
    );
    expect(leftovers.rows[0]!.n).toBe(0);
  });

  it('let a transaction read its own writes before commit, and others only after', async () => {
    const before = await listTotal(db, { orgId, list: 'invoices' });
    await db.transaction(async (tx) => {
      await insertInvoices(tx, [customers[4]!, customers[4]!]);
      expect(await listTotal(tx, { orgId, list: 'invoices' })).toBe(before + 2);
      expect(await listTotal(tx, { orgId, list: 'invoices', customerId: customers[4] })).toBe(2);
      expect(await listTotal(db, { orgId, list: 'invoices' })).toBe(before);
    });
    expect(await listTotal(db, { orgId, list: 'invoices' })).toBe(before + 2);
  });

  it('stay exact under concurrent writers of one organization, without deadlocks', async () => {
    const before = await listTotal(db, { orgId, list: 'invoices' });
    const writers = Array.from({ length: 8 }, (_, w) =>
      db.transaction(async (tx) => {
        // each writer touches the customers in its own order, several statements per transaction
        const order = w % 2 ? [...customers].reverse() : customers;
        const ids = await insertInvoices(tx, order);
        await tx.query("UPDATE invoices SET status = 'POSTED' WHERE id = ANY($1)", [ids.slice(0, 2)]);
        await insertInvoices(tx, order.slice(0, 2), 'PAID');
        await tx.query('DELETE FROM invoices WHERE id = $1', [ids[4]]);
      }),
    );
    await Promise.all(writers);
    expect(await listTotal(db, { orgId, list: 'invoices' })).toBe(before + 8 * 6);
    expect(await mismatches(db)).toEqual([]);
  });
});

describe('migration 003_list_totals', () => {
  let directory: string;
  let scratch: Database;
  let name: string;

  beforeAll(async () => {
    name = uniqueName('totals_migration');
    await admin(`CREATE DATABASE "${name}"`);
    const url = new URL(testServices().databaseUrl);
    url.pathname = `/${name}`;
    scratch = new Database(url.toString(), { poolSize: 2 });
    directory = await mkdtemp(path.join(tmpdir(), 'migrations-'));
  });
  afterAll(async () => {
    await scratch?.close();
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('seeds the totals of rows written before it', async () => {
    await copyFile(path.join(MIGRATIONS_DIR, '001_initial.sql'), path.join(directory, '001_initial.sql'));
    await migrate(scratch, directory);
    const org = (
      await scratch.query<{ id: number }>("INSERT INTO organizations (name) VALUES ('Old') RETURNING id")
    ).rows[0]!.id;
    await scratch.query(
      "INSERT INTO customers (org_id, name) SELECT $1, 'C' || g FROM generate_series(1, 3) g",
      [org],
    );
    await scratch.query(
      `INSERT INTO subscriptions (org_id, customer_id, status, start_date, next_billing_date, billing_period,
         billing_anchor_day, current_period_start, current_period_end)
       SELECT org_id, id, CASE WHEN id % 2 = 0 THEN 'active' ELSE 'paused' END, now(), now(), 'monthly', 1, now(), now()
         FROM customers`,
    );
    await scratch.query(
      `INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start,
         period_end, due_date, status, currency)
       SELECT s.org_id, 'I' || s.id || '-' || g, s.customer_id, s.id, '2026-01-01', '2020-01-01'::date + g,
              '2026-01-31', '2026-01-31', CASE WHEN g % 3 = 0 THEN 'PAID' ELSE 'POSTED' END, 'CAD'
         FROM subscriptions s CROSS JOIN generate_series(1, 4) g`,
    );
    await copyFile(
      path.join(MIGRATIONS_DIR, '003_list_totals.sql'),
      path.join(directory, '003_list_totals.sql'),
    );
    expect(await migrate(scratch, directory)).toEqual(['003_list_totals']);
    expect(await mismatches(scratch)).toEqual([]);
    expect(await listTotal(scratch, { orgId: org, list: 'invoices', status: 'POSTED' })).toBe(9);
  });
});

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: testServices().databaseUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
