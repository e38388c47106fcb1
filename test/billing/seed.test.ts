import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INVOICE_STATUSES } from '../../libs/schemas/index.js';
import { seedDemoData } from '../../libs/seed/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { recordCredentials } from '../helpers/run-log.js';
import { expectPayableInvoices } from './fixtures.js';

/** The demo data (issue 3 item 10): seeded through the billing paths, so it obeys their rules. */

let database: TestDatabase;
let orgId: number;
let seconds: number;

beforeAll(async () => {
  database = await createTestDatabase('seed');
  const started = Date.now();
  const [org] = await seedDemoData(database.db, { orgs: 1, publishUsage: undefined });
  seconds = (Date.now() - started) / 1000;
  recordCredentials(org!.api_key);
  orgId = org!.id;
});
afterAll(() => database.drop());

const query = async <T extends Record<string, unknown>>(sql: string) =>
  (await database.db.query<T>(sql, [orgId])).rows;

describe('demo seed', () => {
  it('issues payable amounts: every invoice, line and transaction in the minor unit, totals exact', async () => {
    expect(await expectPayableInvoices(database.db, orgId)).toBeGreaterThan(20);
    const [balances] = await query<{ wrong: number }>(
      `SELECT count(*)::int AS wrong FROM invoices
        WHERE org_id = $1 AND amount_paid <> (SELECT coalesce(sum(amount), 0) FROM invoice_transactions t
                                               WHERE t.invoice_id = invoices.id AND t.type IN ('PAYMENT', 'CREDIT_MEMO')
                                                 AND t.status IN ('COMPLETED', 'REFUNDED'))`,
    );
    expect(balances!.wrong).toBe(0);
  });

  it('is quick', () => {
    expect(seconds).toBeLessThan(15);
  });

  it('has >= 60 customers in Canada and the US, enough for three pages of 25', async () => {
    const [row] = await query<{ n: number; ca: number; us: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE country = 'CA')::int AS ca,
              count(*) FILTER (WHERE country = 'US')::int AS us FROM customers WHERE org_id = $1`,
    );
    expect(row!.n).toBeGreaterThan(50);
    expect(row!.ca).toBeGreaterThan(0);
    expect(row!.us).toBeGreaterThan(0);
  });

  it('has products of every pricing type, model, scheme and mode, with tiers', async () => {
    const rows = await query<{ kind: string }>(
      `SELECT DISTINCT unnest(ARRAY[pricing_type, pricing_model, pricing_scheme, coalesce(pricing_mode, '-'), currency]) AS kind
         FROM products WHERE org_id = $1`,
    );
    expect(rows.map((r) => r.kind).sort()).toEqual(
      [
        '-',
        'CAD',
        'USD',
        'flat',
        'flat_fee',
        'graduated',
        'linear',
        'one_time',
        'per_unit',
        'recurring',
        'tiered',
        'usage',
        'volume',
      ].sort(),
    );
    const [tiers] = await query<{ n: number }>(
      'SELECT count(*)::int AS n FROM product_price_tiers WHERE org_id = $1',
    );
    expect(tiers!.n).toBeGreaterThan(6);
  });

  it('has subscriptions in several statuses, with licensed and metered items', async () => {
    const statuses = await query<{ status: string }>(
      'SELECT DISTINCT status FROM subscriptions WHERE org_id = $1',
    );
    expect(statuses.map((r) => r.status).sort()).toEqual(
      expect.arrayContaining(['active', 'canceled', 'expired', 'past_due', 'pending', 'trialing']),
    );
    const [items] = await query<{ metered: number; licensed: number }>(
      `SELECT count(*) FILTER (WHERE usage_type = 'metered')::int AS metered,
              count(*) FILTER (WHERE usage_type = 'licensed')::int AS licensed
         FROM subscription_items WHERE org_id = $1`,
    );
    expect(items!.metered).toBeGreaterThanOrEqual(2);
    expect(items!.licensed).toBeGreaterThanOrEqual(2);
    const [flagged] = await query<{ n: number }>(
      `SELECT count(*)::int AS n FROM subscriptions WHERE org_id = $1 AND cancel_at_period_end AND status <> 'canceled'`,
    );
    expect(flagged!.n).toBeGreaterThanOrEqual(1);
  });

  it('cancels at once, at the period end before the run, and flags one to cancel after it', async () => {
    const rows = await query<{ status: string; flagged: boolean; skus: string }>(
      `SELECT s.status, s.cancel_at_period_end AS flagged,
              (SELECT string_agg(p.sku, ',' ORDER BY p.sku) FROM subscription_items i
                 JOIN products p ON p.id = i.product_id WHERE i.subscription_id = s.id) AS skus
         FROM subscriptions s
        WHERE s.org_id = $1 AND (s.status = 'canceled' OR s.cancel_at_period_end)
        ORDER BY skus, s.status`,
    );
    expect(rows).toEqual(
      [
        // canceled at its period end, which the billing run reached
        { status: 'canceled', flagged: true, skus: 'SEAT,USG-MSG' },
        // canceled after the run, at once
        { status: 'canceled', flagged: false, skus: 'SEAT' },
        // flagged after the run: active until its period ends
        { status: 'active', flagged: true, skus: 'PLAT-FEE' },
      ].sort((a, b) => a.skus.localeCompare(b.skus)),
    );
  });

  it('has invoices in every status, with transactions (some several)', async () => {
    const statuses = await query<{ status: string }>(
      'SELECT DISTINCT status FROM invoices WHERE org_id = $1',
    );
    expect(statuses.map((r) => r.status).sort()).toEqual([...INVOICE_STATUSES].sort());
    const [several] = await query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT invoice_id FROM invoice_transactions WHERE org_id = $1
        GROUP BY invoice_id HAVING count(*) > 1) x`,
    );
    expect(several!.n).toBeGreaterThan(2);
    const types = await query<{ type: string }>(
      'SELECT DISTINCT type FROM invoice_transactions WHERE org_id = $1',
    );
    expect(types.map((r) => r.type).sort()).toEqual(['CREDIT_MEMO', 'PAYMENT', 'REFUND']);
  });

  it('posts the first draft by hand and leaves the others in draft', async () => {
    const rows = await query<{ status: string }>(
      `SELECT status FROM invoices WHERE org_id = $1 AND subscription_id IN
         (SELECT subscription_id FROM subscription_items i JOIN products p ON p.id = i.product_id
           WHERE i.org_id = $1 AND p.sku = 'SEAT' AND i.quantity = 6)
        ORDER BY period_start, invoice_number`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows.map((row) => row.status)).toEqual(['POSTED', ...rows.slice(1).map(() => 'DRAFT')]);
  });

  it('obeys the billing rules: totals add up, one currency per invoice, amounts match transactions', async () => {
    const broken = await query(
      `SELECT i.id FROM invoices i
         LEFT JOIN LATERAL (SELECT sum(line_total_pre_tax) AS subtotal, sum(tax_amount) AS tax
                              FROM invoice_items WHERE invoice_id = i.id) it ON true
         LEFT JOIN LATERAL (SELECT coalesce(sum(amount) FILTER (WHERE type IN ('PAYMENT', 'CREDIT_MEMO')), 0) AS paid,
                                   coalesce(sum(amount) FILTER (WHERE type = 'REFUND'), 0) AS refunded
                              FROM invoice_transactions WHERE invoice_id = i.id) t ON true
        WHERE i.org_id = $1 AND (
              i.total <> i.subtotal + i.tax_amount OR i.subtotal <> coalesce(it.subtotal, 0)
           OR i.tax_amount <> coalesce(it.tax, 0) OR i.amount_paid <> t.paid OR i.amount_refunded <> t.refunded
           OR EXISTS (SELECT 1 FROM invoice_items x JOIN products p ON p.id = x.product_id
                       WHERE x.invoice_id = i.id AND p.currency <> i.currency))`,
    );
    expect(broken).toEqual([]);
    const [usage] = await query<{ n: number }>(
      `SELECT count(*)::int AS n FROM invoice_items WHERE org_id = $1 AND subscription_item_id IN
         (SELECT id FROM subscription_items WHERE usage_type = 'metered') AND line_total_pre_tax > 0`,
    );
    expect(usage!.n).toBeGreaterThan(5);
  });

  it('emitted the domain events of what it did', async () => {
    const rows = await query<{ event_type: string; n: number }>(
      'SELECT event_type, count(*)::int AS n FROM outbox WHERE org_id = $1 GROUP BY event_type ORDER BY event_type',
    );
    expect(rows.map((r) => r.event_type)).toEqual([
      'credit_grant.created',
      'credit_grant.depleted',
      'invoice.paid',
      'invoice.posted',
      'payment.succeeded',
      'subscription.canceled',
      'subscription.created',
    ]);
  });
});
