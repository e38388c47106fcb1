import { randomUUID } from 'node:crypto';
import { createCreditGrant } from '../../libs/billing/index.js';
import { createProduct, type NewProduct } from '../../libs/catalog/index.js';
import { createCustomer, getCustomer } from '../../libs/customers/index.js';
import type { Database, Queryable } from '../../libs/db/index.js';
import { CreateCustomer } from '../../libs/schemas/index.js';
import { createSubscription, type NewSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageSink } from '../../libs/usage/index.js';
import { createTestOrg } from '../helpers/fixtures.js';

/** Building blocks of the billing tests, all through the domain functions the console uses. */

export async function customerIn(
  db: Queryable,
  orgId: number,
  overrides: Partial<CreateCustomer> = {},
): Promise<number> {
  const customer = await createCustomer(
    db,
    orgId,
    CreateCustomer.parse({ name: 'Acme Inc.', country: 'CA', state_province: 'ON', ...overrides }),
  );
  return customer.id;
}

export async function productIn(db: Queryable, orgId: number, product: NewProduct): Promise<number> {
  return (await createProduct(db, orgId, product)).id;
}

/** Seats at 10.00 (licensed) and API calls (metered: 1-100 at 1.00, beyond at 0.50, graduated). */
export async function basicCatalog(db: Queryable, orgId: number, currency = 'CAD') {
  const seats = await productIn(db, orgId, {
    name: 'Seats',
    unit_price: '10.00',
    pricing_type: 'recurring',
    currency,
    unit_label: 'seat',
  });
  const apiCalls = await productIn(db, orgId, {
    name: 'API calls',
    pricing_type: 'usage',
    pricing_mode: 'graduated',
    currency,
    unit_label: 'calls',
    tiers: [
      { up_to: '100', unit_price: '1.00' },
      { up_to: null, unit_price: '0.50' },
    ],
  });
  return { seats, apiCalls };
}

/** A fresh organization with the basic catalog and an Ontario customer. */
export async function orgWithCatalog(db: Queryable) {
  const { orgId } = await createTestOrg(db);
  const catalog = await basicCatalog(db, orgId);
  const customerId = await customerIn(db, orgId);
  return { orgId, customerId, ...catalog };
}

export async function subscribe(
  db: Queryable,
  orgId: number,
  input: NewSubscription,
  now = new Date('2026-01-01T00:00:00Z'),
) {
  return createSubscription(db, orgId, input, { now });
}

/** A usage event written as the pg sink writes it, daily totals included (the pipeline is tested on its own). */
export async function recordUsage(
  db: Queryable,
  orgId: number,
  subscriptionItemId: number,
  quantity: string,
  occurredAt: string,
): Promise<void> {
  await new PostgresUsageSink(db).write([
    {
      id: randomUUID(),
      orgId,
      subscriptionItemId,
      idempotencyKey: randomUUID(),
      quantity,
      occurredAtMs: Date.parse(occurredAt),
      recordedAtMs: Date.now(),
    },
  ]);
}

export async function outbox(db: Queryable, orgId: number, type?: string) {
  const { rows } = await db.query<{ id: number; event_type: string; data: Record<string, unknown> }>(
    `SELECT id, event_type, data FROM outbox WHERE org_id = $1 AND ($2::text IS NULL OR event_type = $2) ORDER BY id`,
    [orgId, type ?? null],
  );
  return rows;
}

export async function invoicesOf(db: Queryable, subscriptionId: number) {
  const { rows } = await db.query<{
    id: string;
    invoice_number: string;
    status: string;
    period_start: string;
    period_end: string;
    total: string;
  }>(
    `SELECT id, invoice_number, status, period_start, period_end, total FROM invoices
      WHERE subscription_id = $1 ORDER BY period_start`,
    [subscriptionId],
  );
  return rows;
}

/**
 * Payable amounts (docs/architecture.md, "Money") over every invoice of the database (or one organization): each
 * amount of the invoice, its lines and its transactions has no digit below the currency's minor
 * unit, total = subtotal + tax and the lines add up to both, exactly. Returns how many invoices.
 */
export async function expectPayableInvoices(db: Queryable, orgId?: number): Promise<number> {
  const { rows } = await db.query<{ problem: string }>(
    `WITH scope AS (
       SELECT i.*, CASE WHEN trim(i.currency) = 'JPY' THEN 1 ELSE 0.01 END AS unit
         FROM invoices i WHERE $1::bigint IS NULL OR i.org_id = $1
     ), lines AS (
       SELECT invoice_id, sum(line_total_pre_tax) AS pre_tax, sum(tax_amount) AS tax,
              bool_and(line_total_pre_tax % 0.01 = 0 AND tax_amount % 0.01 = 0) AS whole
         FROM invoice_items GROUP BY invoice_id
     )
     SELECT s.invoice_number || ': ' || CASE
              WHEN s.subtotal % s.unit <> 0 OR s.tax_amount % s.unit <> 0 OR s.total % s.unit <> 0
                   OR s.amount_paid % s.unit <> 0 OR s.amount_refunded % s.unit <> 0 THEN 'amount below the minor unit'
              WHEN s.total <> s.subtotal + s.tax_amount THEN 'total <> subtotal + tax'
              WHEN coalesce(l.pre_tax, 0) <> s.subtotal OR coalesce(l.tax, 0) <> s.tax_amount THEN 'lines do not add up'
              WHEN NOT coalesce(l.whole, true) THEN 'a line below the minor unit'
              WHEN EXISTS (SELECT 1 FROM invoice_transactions t WHERE t.invoice_id = s.id AND t.amount % s.unit <> 0)
                THEN 'a transaction below the minor unit'
            END AS problem
       FROM scope s LEFT JOIN lines l ON l.invoice_id = s.id`,
    [orgId ?? null],
  );
  const problems = rows.filter((row) => row.problem !== null).map((row) => row.problem);
  if (problems.length) throw new Error(`invoices without payable amounts:\n${problems.join('\n')}`);
  return rows.length;
}

/** What a customer's credit grants can pay now (the spec's credit_balance), as the API reads it. */
export async function creditBalance(db: Queryable, customerId: number): Promise<string> {
  const { rows } = await db.query<{ org_id: number }>('SELECT org_id FROM customers WHERE id = $1', [
    customerId,
  ]);
  return (await getCustomer(db, rows[0]!.org_id, customerId)).credit_balance;
}

/** A customer in Alberta (10.00 + 5 % GST = 10.50 an invoice) with `count` monthly subscriptions of 10.00. */
export async function customerWithSubscriptions(db: Database, count: number) {
  const { orgId } = await createTestOrg(db);
  const plan = await productIn(db, orgId, {
    name: 'Plan',
    unit_price: '10.00',
    pricing_type: 'recurring',
    currency: 'CAD',
  });
  const customerId = await customerIn(db, orgId, { state_province: 'AB' });
  const subscriptionIds: number[] = [];
  for (let n = 0; n < count; n++) {
    const subscription = await subscribe(db, orgId, {
      customer_id: customerId,
      items: [{ product_id: plan }],
      start_date: new Date('2026-01-01T00:00:00Z'),
    });
    subscriptionIds.push(subscription.id);
  }
  return { orgId, customerId, subscriptionIds };
}

/** A promotional credit grant of `amount` to the customer, as POST /credit-grants makes it. */
export async function promotionalGrant(
  db: Database,
  customerId: number,
  amount: string,
  extra: Record<string, unknown> = {},
) {
  const { grant } = await db.transaction((tx) =>
    createCreditGrant(tx, { customerId, input: { amount, category: 'promotional', ...extra } }),
  );
  return grant;
}
