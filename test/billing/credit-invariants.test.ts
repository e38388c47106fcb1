import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expireCreditGrants,
  postInvoice,
  runBilling,
  type UsageForTransaction,
  voidCreditGrant,
} from '../../libs/billing/index.js';
import { Database, type Queryable } from '../../libs/db/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { PROJECT_ROOT } from '../helpers/processes.js';
import { customerWithSubscriptions, promotionalGrant } from './fixtures.js';

/*
 * The money invariants of prepaid credits, under concurrency (docs/decisions.md, "Credits"):
 * - for every grant, amount = used + expired + voided + remaining, and its ledger says the same;
 * - the CREDIT_MEMOs naming a grant add up to what its ledger says it paid;
 * - no invoice is paid beyond its total, no grant below zero;
 * - two processes posting for one customer never spend a cent twice; a posting racing a void or
 *   an expiry uses the grant whole or not at all; a billing run killed mid-way and run again uses
 *   no grant twice and loses none.
 * "Processes" are separate pools (separate connections) or real child processes.
 */

let database: TestDatabase;
let second: Database;
const usage: UsageForTransaction = (tx) => new PostgresUsageAggregator(tx);

beforeAll(async () => {
  database = await createTestDatabase('credit_invariants');
  second = new Database(database.url, { poolSize: 10 });
});
afterAll(async () => {
  await second.close();
  await database.drop();
});

/** Every broken invariant over every grant and invoice of the database, in words. */
async function brokenInvariants(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ problem: string }>(
    `WITH ledger AS (
       SELECT credit_grant_id,
              sum(amount) FILTER (WHERE type = 'grant') AS granted,
              coalesce(sum(amount) FILTER (WHERE type = 'use'), 0) AS used,
              coalesce(sum(amount) FILTER (WHERE type = 'expiry'), 0) AS expired,
              coalesce(sum(amount) FILTER (WHERE type = 'void'), 0) AS voided,
              (array_agg(remaining_after ORDER BY id DESC))[1] AS last_remaining
         FROM credit_grant_ledger GROUP BY credit_grant_id
     ), memos AS (
       SELECT credit_grant_id, sum(amount) AS paid FROM invoice_transactions
        WHERE type = 'CREDIT_MEMO' AND credit_grant_id IS NOT NULL GROUP BY credit_grant_id
     )
     SELECT 'grant ' || g.id || ': ' || CASE
              WHEN g.amount <> g.used + g.expired + g.voided + g.remaining THEN 'amount <> used + expired + voided + remaining'
              WHEN l.granted IS DISTINCT FROM g.amount THEN 'ledger grant <> amount'
              WHEN l.used <> g.used THEN 'ledger uses <> used'
              WHEN l.expired <> g.expired THEN 'ledger expiries <> expired'
              WHEN l.voided <> g.voided THEN 'ledger voids <> voided'
              WHEN l.last_remaining <> g.remaining THEN 'ledger remaining <> remaining'
              WHEN coalesce(m.paid, 0) <> g.used THEN 'CREDIT_MEMOs <> used'
              WHEN g.remaining < 0 THEN 'remaining below zero'
              WHEN g.status = 'DEPLETED' AND g.remaining <> 0 THEN 'DEPLETED with a remainder'
            END AS problem
       FROM credit_grants g LEFT JOIN ledger l ON l.credit_grant_id = g.id LEFT JOIN memos m ON m.credit_grant_id = g.id
     UNION ALL
     SELECT 'invoice ' || i.invoice_number || ': paid beyond its total'
       FROM invoices i WHERE i.amount_paid > i.total`,
  );
  return rows.map((row) => row.problem).filter((problem) => problem !== null);
}

async function usedOf(grantId: string): Promise<string> {
  const { rows } = await database.db.query<{ used: string }>(
    'SELECT used::text FROM credit_grants WHERE id = $1',
    [grantId],
  );
  return rows[0]!.used;
}

const grant = (customerId: number, amount: string, extra: Record<string, unknown> = {}) =>
  promotionalGrant(database.db, customerId, amount, extra);

describe('credit invariants', () => {
  it('two processes posting for one customer never spend one cent twice', async () => {
    const { orgId, customerId, subscriptionIds } = await customerWithSubscriptions(database.db, 8);
    const only = await grant(customerId, '42.00'); // four invoices' worth of 10.50
    const now = new Date('2026-02-01T00:00:00Z');
    await Promise.all(
      subscriptionIds.map((id, n) =>
        runBilling(n % 2 ? database.db : second, { usage, orgId, now, subscriptionIds: [id], batchSize: 1 }),
      ),
    );
    expect(await usedOf(only.id)).toBe('42.00000000');
    const { rows } = await database.db.query<{ paid: string; n: number }>(
      `SELECT sum(amount_paid)::text AS paid, count(*)::int AS n FROM invoices WHERE customer_id = $1`,
      [customerId],
    );
    expect(rows[0]).toEqual({ paid: '42.00000000', n: 8 });
    expect(await brokenInvariants(database.db)).toEqual([]);
  });

  it('two processes posting drafts by hand split the grant, never more than it holds', async () => {
    const { orgId, customerId, subscriptionIds } = await customerWithSubscriptions(database.db, 6);
    await runBilling(database.db, {
      usage,
      orgId,
      now: new Date('2026-02-01T00:00:00Z'),
      subscriptionIds,
      post: false,
    });
    const only = await grant(customerId, '20.00');
    const { rows: drafts } = await database.db.query<{ id: string }>(
      `SELECT id FROM invoices WHERE customer_id = $1 AND status = 'DRAFT'`,
      [customerId],
    );
    await Promise.all(
      drafts.map(({ id }, n) =>
        (n % 2 ? database.db : second).transaction((tx) => postInvoice(tx, { invoiceId: id })),
      ),
    );
    expect(await usedOf(only.id)).toBe('20.00000000');
    expect(await brokenInvariants(database.db)).toEqual([]);
  });

  it('a posting racing a void uses the grant whole or not at all', async () => {
    for (let round = 0; round < 6; round++) {
      const { orgId, customerId, subscriptionIds } = await customerWithSubscriptions(database.db, 2);
      const racing = await grant(customerId, '15.00');
      const [billed] = await Promise.allSettled([
        runBilling(database.db, { usage, orgId, now: new Date('2026-02-01T00:00:00Z'), subscriptionIds }),
        second.transaction((tx) => voidCreditGrant(tx, { grantId: racing.id })),
      ]);
      expect(billed.status).toBe('fulfilled');
      const { rows } = await database.db.query<{
        used: string;
        voided: string;
        remaining: string;
        status: string;
      }>('SELECT used::text, voided::text, remaining::text, status FROM credit_grants WHERE id = $1', [
        racing.id,
      ]);
      const state = rows[0]!;
      // either the posting came first (two invoices of 10.50 use all 15.00: the void then finds it
      // DEPLETED and changes nothing) or the void did (nothing used)
      expect([
        ['15.00000000', '0.00000000', 'DEPLETED'],
        ['0.00000000', '15.00000000', 'VOIDED'],
      ]).toContainEqual([state.used, state.voided, state.status]);
      expect(state.remaining).toBe('0.00000000');
    }
    expect(await brokenInvariants(database.db)).toEqual([]);
  });

  it('a posting racing the expiry sweep at the expiry instant never uses the expired grant', async () => {
    const { orgId, customerId, subscriptionIds } = await customerWithSubscriptions(database.db, 3);
    const expiring = await grant(customerId, '30.00', {
      effective_at: '2026-01-01T00:00:00Z',
      expires_at: '2026-03-01T00:00:00Z',
    });
    const at = new Date('2026-03-01T00:00:00Z');
    await Promise.all([
      runBilling(database.db, {
        usage,
        orgId,
        now: new Date('2026-02-01T00:00:00Z'),
        subscriptionIds,
        postingTime: at,
      }),
      expireCreditGrants(second, at),
    ]);
    const { rows } = await database.db.query<{ used: string; expired: string; status: string }>(
      'SELECT used::text, expired::text, status FROM credit_grants WHERE id = $1',
      [expiring.id],
    );
    expect(rows[0]).toEqual({ used: '0.00000000', expired: '30.00000000', status: 'EXPIRED' });
    expect(await brokenInvariants(database.db)).toEqual([]);
  });

  it('the expiry sweep lapses a grant at its expires_at instant, not a millisecond before', async () => {
    // docs/decisions.md, "Credits": usable to `expires_at` exclusive; at expiry its remainder lapses.
    // An instant before every other grant of this file's, so the sweep touches this one only.
    const { customerId } = await customerWithSubscriptions(database.db, 1);
    const expiring = await grant(customerId, '12.34', {
      effective_at: '2025-01-01T00:00:00Z',
      expires_at: '2025-06-01T00:00:00.250Z',
    });
    const statusOf = async () =>
      (
        await database.db.query<{ status: string; expired: string; remaining: string }>(
          'SELECT status, expired::text, remaining::text FROM credit_grants WHERE id = $1',
          [expiring.id],
        )
      ).rows[0];
    expect(await expireCreditGrants(database.db, new Date('2025-06-01T00:00:00.249Z'))).toEqual([]);
    expect(await statusOf()).toEqual({ status: 'ACTIVE', expired: '0.00000000', remaining: '12.34000000' });
    const touched = await expireCreditGrants(database.db, new Date('2025-06-01T00:00:00.250Z'));
    expect(touched.map((customer) => customer.customerId)).toEqual([customerId]);
    expect(await statusOf()).toEqual({ status: 'EXPIRED', expired: '12.34000000', remaining: '0.00000000' });
    expect(await brokenInvariants(database.db)).toEqual([]);
  });

  it('a billing run killed mid-way and run again uses no grant twice and loses none', async () => {
    const { orgId, customerId, subscriptionIds } = await customerWithSubscriptions(database.db, 60);
    const big = await grant(customerId, '300.00');
    const env = {
      DATABASE_URL: database.url,
      LOG_LEVEL: 'silent',
      CLICKHOUSE_URL: '',
      KAFKA_BROKERS: '',
      REDIS_URL: '',
    };
    const args = ['--import', 'tsx', path.join(PROJECT_ROOT, 'bin/console.ts')];
    const billArgs = [
      'billing',
      'run',
      '--org',
      String(orgId),
      '--now',
      '2026-02-01T00:00:00Z',
      '--batch-size',
      '1',
    ];
    // the first run is killed as soon as it has posted some invoices
    const child = spawn(process.execPath, [...args, ...billArgs], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...env },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    for (;;) {
      const { rows } = await database.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM invoices WHERE customer_id = $1',
        [customerId],
      );
      if (rows[0]!.n >= 5 || child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    child.kill('SIGKILL');
    await exited;
    const { rows: before } = await database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM invoices WHERE customer_id = $1',
      [customerId],
    );
    expect(before[0]!.n).toBeLessThan(60);
    await runBilling(database.db, { usage, orgId, now: new Date('2026-02-01T00:00:00Z') });
    // 60 invoices of 10.50 = 630.00: the grant paid 300.00, once, on the invoices posted first
    const { rows } = await database.db.query<{ n: number; paid: string }>(
      'SELECT count(*)::int AS n, sum(amount_paid)::text AS paid FROM invoices WHERE customer_id = $1',
      [customerId],
    );
    expect(rows[0]).toEqual({ n: 60, paid: '300.00000000' });
    expect(await usedOf(big.id)).toBe('300.00000000');
    expect(await brokenInvariants(database.db)).toEqual([]);
    expect(subscriptionIds).toHaveLength(60);
  });
});
