import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  activeGrantsOfHeld,
  lockCreditCustomer,
  readActiveGrants,
  recordGrantUses,
  toBurnableGrant,
} from '../../libs/billing/credits/grants.js';
import { type PostingInvoice, planCreditsOnPosting } from '../../libs/billing/credits/posting.js';
import { runBilling, type UsageForTransaction, voidCreditGrant } from '../../libs/billing/index.js';
import type { Queryable } from '../../libs/db/index.js';
import { ApiError } from '../../libs/errors/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import {
  customerIn,
  customerWithSubscriptions,
  outbox,
  productIn,
  promotionalGrant,
  subscribe,
} from './fixtures.js';

/*
 * How a posting writes what its burn-down used (recordGrantUses, one statement per billing run
 * batch): each grant updated once from the sum of its uses, only while it still holds what the
 * burn-down was planned from; the ledger's uses in burn-down order; the CREDIT_MEMOs and the
 * ledger agreeing with the grants.
 */

let database: TestDatabase;
const usage: UsageForTransaction = (tx) => new PostgresUsageAggregator(tx);

beforeAll(async () => {
  database = await createTestDatabase('credit_grant_uses');
});
afterAll(async () => {
  await database.drop();
});

/** An invoice of 10.00 CAD owed, no usage, as a posting passes it to planCreditsOnPosting. */
function postingInvoice(
  id: string,
  orgId: number,
  customerId: number,
  overrides: Partial<PostingInvoice> = {},
): PostingInvoice {
  return {
    id,
    org_id: orgId,
    customer_id: customerId,
    currency: 'CAD',
    balance: '10.00000000',
    usage_amount: '0.00000000',
    prepaid_credits: false,
    ...overrides,
  };
}

const grant = (customerId: number, amount: string, extra: Record<string, unknown> = {}) =>
  promotionalGrant(database.db, customerId, amount, extra);

/** The DRAFT invoices of the customer's subscriptions (a run that does not post). */
async function drafts(orgId: number, subscriptionIds: number[]): Promise<string[]> {
  await runBilling(database.db, {
    usage,
    orgId,
    now: new Date('2026-02-01T00:00:00Z'),
    subscriptionIds,
    post: false,
  });
  const { rows } = await database.db.query<{ id: string }>(
    `SELECT id FROM invoices WHERE subscription_id = ANY($1::bigint[]) ORDER BY subscription_id`,
    [subscriptionIds],
  );
  return rows.map((row) => row.id);
}

async function grantState(db: Queryable, grantId: string) {
  const { rows } = await db.query<{ used: string; remaining: string; status: string }>(
    'SELECT used::text, remaining::text, status FROM credit_grants WHERE id = $1',
    [grantId],
  );
  return rows[0];
}

/** The grant's ledger (id order) and its CREDIT_MEMOs' total. */
async function ledgerAndMemos(grantId: string) {
  const { rows: ledger } = await database.db.query<{ type: string; amount: string; remaining_after: string }>(
    `SELECT type, amount::text, remaining_after::text FROM credit_grant_ledger
      WHERE credit_grant_id = $1 ORDER BY id`,
    [grantId],
  );
  const { rows: memos } = await database.db.query<{ n: number; paid: string | null }>(
    `SELECT count(*)::int AS n, sum(amount)::text AS paid FROM invoice_transactions
      WHERE type = 'CREDIT_MEMO' AND credit_grant_id = $1`,
    [grantId],
  );
  return { ledger, memos: memos[0]! };
}

describe('recording grant uses', () => {
  it('refuses a burn-down planned from a grant that was spent since, and writes nothing of it', async () => {
    const { orgId, customerId, subscriptionIds } = await customerWithSubscriptions(database.db, 2);
    const [first, second] = await drafts(orgId, subscriptionIds);
    const held = await grant(customerId, '10.00');
    // two postings planned from the same read of the grant (10.00 left): each uses 4.00
    const stale = (invoiceId: string) => [
      {
        org_id: orgId,
        invoice_id: invoiceId,
        credit_grant_id: held.id,
        amount: '4.00000000',
        remaining_after: '6.00000000',
      },
    ];
    await database.db.transaction(async (tx) => {
      await lockCreditCustomer(tx, customerId, orgId);
      await recordGrantUses(tx, stale(first!));
    });
    const refused = await database.db
      .transaction(async (tx) => {
        await lockCreditCustomer(tx, customerId, orgId);
        await recordGrantUses(tx, stale(second!));
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).code).toBe('SERVICE_UNAVAILABLE');
    // 4.00 spent once: one memo, one ledger use, nothing of the refused plan
    expect(await grantState(database.db, held.id)).toEqual({
      used: '4.00000000',
      remaining: '6.00000000',
      status: 'ACTIVE',
    });
    const { ledger, memos } = await ledgerAndMemos(held.id);
    expect(ledger.map((entry) => entry.type)).toEqual(['grant', 'use']);
    expect(memos).toEqual({ n: 1, paid: '4.00000000' });
  });

  it('updates a grant used by several invoices of a batch once, by their sum; the ledger in burn-down order', async () => {
    const { orgId, customerId, subscriptionIds } = await customerWithSubscriptions(database.db, 3);
    const invoices = await drafts(orgId, subscriptionIds);
    const small = await grant(customerId, '5.00', { priority: 10 });
    const large = await grant(customerId, '100.00');
    const events = await database.db.transaction(async (tx) => {
      await lockCreditCustomer(tx, customerId, orgId);
      const grants = (await activeGrantsOfHeld(tx, [{ org_id: orgId, id: customerId }])).get(customerId)!;
      expect(grants.map((g) => g.id).sort()).toEqual([small.id, large.id].sort());
      const use = (invoice: number, grantId: string, amount: string, after: string) => ({
        org_id: orgId,
        invoice_id: invoices[invoice]!,
        credit_grant_id: grantId,
        amount,
        remaining_after: after,
      });
      // the small grant's 5.00 goes in two uses, the large one's in three
      return recordGrantUses(tx, [
        use(0, small.id, '3.00000000', '2.00000000'),
        use(0, large.id, '7.50000000', '92.50000000'),
        use(1, small.id, '2.00000000', '0.00000000'),
        use(1, large.id, '8.50000000', '84.00000000'),
        use(2, large.id, '10.50000000', '73.50000000'),
      ]);
    });
    // one credit_grant.depleted, for the grant used up, though two uses touched it
    expect(events.map((event) => [event.type, (event.data as { id: string }).id])).toEqual([
      ['credit_grant.depleted', small.id],
    ]);
    expect(await grantState(database.db, small.id)).toEqual({
      used: '5.00000000',
      remaining: '0.00000000',
      status: 'DEPLETED',
    });
    expect(await grantState(database.db, large.id)).toEqual({
      used: '26.50000000',
      remaining: '73.50000000',
      status: 'ACTIVE',
    });
    const large_ = await ledgerAndMemos(large.id);
    expect(large_.ledger.map((entry) => [entry.type, entry.amount, entry.remaining_after])).toEqual([
      ['grant', '100.00000000', '100.00000000'],
      ['use', '7.50000000', '92.50000000'],
      ['use', '8.50000000', '84.00000000'],
      ['use', '10.50000000', '73.50000000'],
    ]);
    expect(large_.memos).toEqual({ n: 3, paid: '26.50000000' });
    const small_ = await ledgerAndMemos(small.id);
    expect(small_.ledger.map((entry) => entry.remaining_after)).toEqual([
      '5.00000000',
      '2.00000000',
      '0.00000000',
    ]);
    expect(small_.memos).toEqual({ n: 2, paid: '5.00000000' });
  });

  it('a billing run batch of one customer spends its grants in order; ledger, memos and grants agree', async () => {
    const { orgId, customerId } = await customerWithSubscriptions(database.db, 3);
    const first = await grant(customerId, '12.00', { priority: 10 });
    const then = await grant(customerId, '20.00', { priority: 20 });
    // one batch: three invoices of 10.50 (31.50) against 32.00 of credit
    await runBilling(database.db, { usage, orgId, now: new Date('2026-02-01T00:00:00Z'), batchSize: 10 });
    expect(await grantState(database.db, first.id)).toEqual({
      used: '12.00000000',
      remaining: '0.00000000',
      status: 'DEPLETED',
    });
    expect(await grantState(database.db, then.id)).toEqual({
      used: '19.50000000',
      remaining: '0.50000000',
      status: 'ACTIVE',
    });
    const firstLedger = await ledgerAndMemos(first.id);
    expect(firstLedger.ledger.map((entry) => [entry.amount, entry.remaining_after])).toEqual([
      ['12.00000000', '12.00000000'],
      ['10.50000000', '1.50000000'],
      ['1.50000000', '0.00000000'],
    ]);
    expect(firstLedger.memos).toEqual({ n: 2, paid: '12.00000000' });
    const thenLedger = await ledgerAndMemos(then.id);
    expect(thenLedger.ledger.map((entry) => [entry.amount, entry.remaining_after])).toEqual([
      ['20.00000000', '20.00000000'],
      ['9.00000000', '11.00000000'],
      ['10.50000000', '0.50000000'],
    ]);
    expect(thenLedger.memos).toEqual({ n: 2, paid: '19.50000000' });
    const { rows } = await database.db.query<{ paid: string; statuses: string[] }>(
      `SELECT sum(amount_paid)::text AS paid, array_agg(status ORDER BY status) AS statuses
         FROM invoices WHERE customer_id = $1`,
      [customerId],
    );
    expect(rows[0]).toEqual({ paid: '31.50000000', statuses: ['PAID', 'PAID', 'PAID'] });
    expect((await outbox(database.db, orgId, 'credit_grant.depleted')).map((e) => e.data.id)).toEqual([
      first.id,
    ]);
  });

  it('reads held grants for posting as the preview reads them', async () => {
    const { orgId, customerId } = await customerWithSubscriptions(database.db, 0);
    await grant(customerId, '5.00', { priority: 10, expires_at: '2027-03-01T12:34:56.789Z' });
    await grant(customerId, '20.00', { priority: 20, applies_to: 'usage' });
    await grant(customerId, '1000.00', { effective_at: '2026-01-15T08:00:00.5Z' });
    // neither reads a grant that is not ACTIVE: one waiting for its payment, one voided
    await grant(customerId, '30.00', { category: 'paid' });
    const voided = await grant(customerId, '40.00');
    await database.db.transaction((tx) => voidCreditGrant(tx, { grantId: voided.id }));
    const held = await database.db.transaction(async (tx) => {
      await lockCreditCustomer(tx, customerId, orgId);
      return (await activeGrantsOfHeld(tx, [{ org_id: orgId, id: customerId }])).get(customerId)!;
    });
    const rows = await readActiveGrants(database.db, orgId, customerId);
    const preview = rows.map((row) => ({
      ...toBurnableGrant(row),
      org_id: row.org_id,
      customer_id: row.customer_id,
    }));
    expect(preview).toHaveLength(3);
    // the same grants, field for field, instants included: posting burns down what the preview shows
    expect(held).toEqual(
      preview.map((grant) => ({
        id: grant.id,
        org_id: grant.org_id,
        customer_id: grant.customer_id,
        status: grant.status,
        currency: grant.currency,
        remaining: grant.remaining,
        priority: grant.priority,
        applies_to: grant.applies_to,
        effective_at: grant.effective_at,
        expires_at: grant.expires_at,
        created_at: grant.created_at,
      })),
    );
    expect(held.map((grant) => grant.expires_at?.toISOString() ?? null).sort()).toEqual([
      '2027-03-01T12:34:56.789Z',
      null,
      null,
    ]);
  });

  it("plans each customer's invoices of a batch from that customer's grants, in the order given", async () => {
    const { orgId, customerId: first } = await customerWithSubscriptions(database.db, 0);
    const second = await customerIn(database.db, orgId, { state_province: 'AB' });
    const firstGrant = await grant(first, '15.00');
    const secondGrant = await grant(second, '5.00');
    // the two customers' invoices interleaved, as a batch of several customers passes them
    const invoice = (id: string, customerId: number) => postingInvoice(id, orgId, customerId);
    const planned = await database.db.transaction(async (tx) => {
      await lockCreditCustomer(tx, first, orgId);
      await lockCreditCustomer(tx, second, orgId);
      return planCreditsOnPosting(
        tx,
        [invoice('a1', first), invoice('b1', second), invoice('a2', first), invoice('b2', second)],
        new Date(),
      );
    });
    const use = (grantId: string, amount: string, after: string) => ({
      credit_grant_id: grantId,
      amount,
      remaining_after: after,
    });
    expect(planned.uses).toEqual([
      [use(firstGrant.id, '10.00000000', '5.00000000')],
      [use(secondGrant.id, '5.00000000', '0.00000000')],
      [use(firstGrant.id, '5.00000000', '0.00000000')],
      [],
    ]);
  });

  it('keeps each invoice in its place: one credits may not pay gets none, the ones after it theirs', async () => {
    const { orgId, customerId } = await customerWithSubscriptions(database.db, 0);
    const held = await grant(customerId, '15.00');
    const invoice = (id: string, overrides: Partial<PostingInvoice> = {}) =>
      postingInvoice(id, orgId, customerId, overrides);
    const planned = await database.db.transaction(async (tx) => {
      await lockCreditCustomer(tx, customerId, orgId);
      return planCreditsOnPosting(
        tx,
        [
          invoice('prepaid', { prepaid_credits: true }),
          invoice('settled', { balance: '0.00000000' }),
          invoice('first'),
          invoice('second'),
        ],
        new Date(),
      );
    });
    expect(planned.uses).toEqual([
      [],
      [],
      [{ credit_grant_id: held.id, amount: '10.00000000', remaining_after: '5.00000000' }],
      [{ credit_grant_id: held.id, amount: '5.00000000', remaining_after: '0.00000000' }],
    ]);
  });

  it("claims a customer's subscriptions due together in one batch: its grants are written once", async () => {
    const { orgId } = await createTestOrg(database.db);
    const plan = await productIn(database.db, orgId, {
      name: 'Plan',
      unit_price: '10.00',
      pricing_type: 'recurring',
      currency: 'CAD',
    });
    const first = await customerIn(database.db, orgId, { state_province: 'AB' });
    const second = await customerIn(database.db, orgId, { state_province: 'AB' });
    // subscriptions made alternately: in id order a batch of two would hold one of each customer
    for (const customerId of [first, second, first, second]) {
      await subscribe(database.db, orgId, {
        customer_id: customerId,
        items: [{ product_id: plan }],
        start_date: new Date('2026-01-01T00:00:00Z'),
      });
    }
    const held = await grant(first, '50.00');
    await runBilling(database.db, { usage, orgId, now: new Date('2026-02-01T00:00:00Z'), batchSize: 2 });
    // both uses in one transaction (one now()), the grant updated once from their sum
    const { rows } = await database.db.query<{ n: number; at: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT created_at)::int AS at FROM credit_grant_ledger
        WHERE credit_grant_id = $1 AND type = 'use'`,
      [held.id],
    );
    expect(rows[0]).toEqual({ n: 2, at: 1 });
    expect(await grantState(database.db, held.id)).toEqual({
      used: '21.00000000',
      remaining: '29.00000000',
      status: 'ACTIVE',
    });
  });
});
