import type { Queryable } from '../../libs/db/index.js';

/**
 * A small, fully known billing data set for one organization, by plain SQL (tests only). Every
 * name carries `label`, so a test can tell whose data a tool returned. Dates are relative to
 * today (UTC) so "overdue" means the same thing whenever the test runs.
 *
 *   customers: Quebec (fr-CA), Ontario (en-CA), New York (en-US, tax-exempt)
 *   products:  flat recurring (active), tiered usage with 2 tiers (active), old plan (inactive)
 *   subscriptions: Quebec active CAD, Ontario trialing CAD, New York active USD
 *   invoices (CAD unless said):
 *     A POSTED          Quebec   total 114.97500000, due 10 days ago  -> open, overdue
 *     B PARTIALLY_PAID  Quebec   total 200, paid 55, due in 20 days   -> open, not overdue
 *     C PAID            Ontario  total 113, paid 113
 *     D DRAFT           Ontario  total 999 (not issued: never in totals)
 *     E POSTED USD      New York total 100, due 5 days ago            -> open, overdue
 *   transactions: payments 113 on C and 50 on B (completed), 25 on A (failed); a credit memo of 5 on B
 */
export interface BillingFixture {
  orgId: number;
  label: string;
  customers: { quebec: number; ontario: number; newYork: number };
  products: { flat: number; tiered: number; inactive: number };
  subscriptions: { quebec: number; ontario: number; newYork: number };
  invoices: { posted: string; partiallyPaid: string; paid: string; draft: string; postedUsd: string };
  payments: { partial: string; full: string; failed: string };
}

function isoDate(offsetDays: number): string {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

async function insertOne<T>(db: Queryable, sql: string, values: unknown[]): Promise<T> {
  const { rows } = await db.query<{ id: T }>(`${sql} RETURNING id`, values);
  return rows[0]!.id;
}

export async function seedBillingFixture(
  db: Queryable,
  orgId: number,
  label: string,
): Promise<BillingFixture> {
  const customer = (name: string, country: string, province: string, taxExempt: boolean, createdAt: string) =>
    insertOne<number>(
      db,
      `INSERT INTO customers (org_id, name, email, country, state_province, tax_exempt, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
      [
        orgId,
        `${label} ${name}`,
        `${name.toLowerCase().replace(/\W+/g, '.')}@${label.toLowerCase()}.example`,
        country,
        province,
        taxExempt,
        createdAt,
      ],
    );
  const quebec = await customer('Quebec Client', 'CA', 'QC', false, '2026-01-01T00:00:00Z');
  const ontario = await customer('Ontario Client', 'CA', 'ON', false, '2026-01-02T00:00:00Z');
  const newYork = await customer('New York Client', 'US', 'NY', true, '2026-01-03T00:00:00Z');

  const product = (o: {
    name: string;
    pricingType: string;
    unitPrice: string;
    currency: string;
    mode: string | null;
    active: boolean;
    createdAt: string;
  }) =>
    insertOne<number>(
      db,
      `INSERT INTO products (org_id, name, sku, pricing_type, unit_price, currency, pricing_scheme, pricing_mode,
         is_active, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
      [
        orgId,
        `${label} ${o.name}`,
        `${label}-${o.name}`.toUpperCase().replace(/\W+/g, '-'),
        o.pricingType,
        o.unitPrice,
        o.currency,
        o.mode ? 'tiered' : 'linear',
        o.mode,
        o.active,
        o.createdAt,
      ],
    );
  const flat = await product({
    name: 'Flat Plan',
    pricingType: 'recurring',
    unitPrice: '49.99',
    currency: 'CAD',
    mode: null,
    active: true,
    createdAt: '2026-01-01T00:00:00Z',
  });
  const tiered = await product({
    name: 'Tiered API Calls',
    pricingType: 'usage',
    unitPrice: '0',
    currency: 'CAD',
    mode: 'graduated',
    active: true,
    createdAt: '2026-01-02T00:00:00Z',
  });
  const inactive = await product({
    name: 'Old Plan',
    pricingType: 'recurring',
    unitPrice: '10',
    currency: 'USD',
    mode: null,
    active: false,
    createdAt: '2026-01-03T00:00:00Z',
  });
  await db.query(
    `INSERT INTO product_price_tiers (org_id, product_id, position, up_to, unit_price, flat_fee)
     VALUES ($1, $2, 0, 1000, 0.01, 0), ($1, $2, 1, NULL, 0.005, 5)`,
    [orgId, tiered],
  );

  const subscription = (customerId: number, status: string, currency: string, createdAt: string) =>
    insertOne<number>(
      db,
      `INSERT INTO subscriptions (org_id, customer_id, status, title, currency, start_date, next_billing_date,
         billing_period, billing_anchor_day, current_period_start, current_period_end, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6::timestamptz + interval '1 month', 'monthly', 1, $6,
         $6::timestamptz + interval '1 month', $6, $6)`,
      [orgId, customerId, status, `${label} subscription`, currency, createdAt],
    );
  const subQuebec = await subscription(quebec, 'active', 'CAD', '2026-01-05T00:00:00Z');
  const subOntario = await subscription(ontario, 'trialing', 'CAD', '2026-01-06T00:00:00Z');
  const subNewYork = await subscription(newYork, 'active', 'USD', '2026-01-07T00:00:00Z');
  await db.query(
    `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type, included_units)
     VALUES ($1, $2, $3, 1, 49.99, 'licensed', 0), ($1, $2, $4, 0, 0, 'metered', 1000),
            ($1, $5, $3, 2, 49.99, 'licensed', 0), ($1, $6, $7, 1, 10, 'licensed', 0)`,
    [orgId, subQuebec, flat, tiered, subOntario, subNewYork, inactive],
  );

  let invoiceCount = 0;
  const invoice = async (o: {
    customerId: number;
    subscriptionId: number;
    status: string;
    subtotal: string;
    tax: string;
    total: string;
    paid: string;
    currency: string;
    invoiceDate: string;
    dueDate: string;
    taxType: string | null;
    productId: number;
  }) => {
    invoiceCount += 1;
    const id = await insertOne<string>(
      db,
      `INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start,
         period_end, due_date, status, subtotal, tax_amount, total, amount_paid, currency, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $5, $5::date + 30, $6, $7, $8, $9, $10, $11, $12, $13, $13)`,
      [
        orgId,
        `INV-${String(invoiceCount).padStart(6, '0')}`,
        o.customerId,
        o.subscriptionId,
        o.invoiceDate,
        o.dueDate,
        o.status,
        o.subtotal,
        o.tax,
        o.total,
        o.paid,
        o.currency,
        `2026-02-0${invoiceCount}T00:00:00Z`,
      ],
    );
    await db.query(
      `INSERT INTO invoice_items (org_id, invoice_id, position, product_id, description, quantity, unit_price,
         line_total_pre_tax, tax_amount, tax_type)
       VALUES ($1, $2, 0, $3, $4, 1, $5, $5, $6, $7)`,
      [orgId, id, o.productId, `${label} line`, o.subtotal, o.tax, o.taxType],
    );
    return id;
  };
  const posted = await invoice({
    customerId: quebec,
    subscriptionId: subQuebec,
    status: 'POSTED',
    subtotal: '100',
    tax: '14.975',
    total: '114.975',
    paid: '0',
    currency: 'CAD',
    invoiceDate: isoDate(-40),
    dueDate: isoDate(-10),
    taxType: 'GST_QST',
    productId: flat,
  });
  const partiallyPaid = await invoice({
    customerId: quebec,
    subscriptionId: subQuebec,
    status: 'PARTIALLY_PAID',
    subtotal: '200',
    tax: '0',
    total: '200',
    paid: '55',
    currency: 'CAD',
    invoiceDate: isoDate(-10),
    dueDate: isoDate(20),
    taxType: null,
    productId: flat,
  });
  const paid = await invoice({
    customerId: ontario,
    subscriptionId: subOntario,
    status: 'PAID',
    subtotal: '100',
    tax: '13',
    total: '113',
    paid: '113',
    currency: 'CAD',
    invoiceDate: isoDate(-60),
    dueDate: isoDate(-30),
    taxType: 'HST',
    productId: flat,
  });
  const draft = await invoice({
    customerId: ontario,
    subscriptionId: subOntario,
    status: 'DRAFT',
    subtotal: '999',
    tax: '0',
    total: '999',
    paid: '0',
    currency: 'CAD',
    invoiceDate: isoDate(-1),
    dueDate: isoDate(29),
    taxType: null,
    productId: flat,
  });
  const postedUsd = await invoice({
    customerId: newYork,
    subscriptionId: subNewYork,
    status: 'POSTED',
    subtotal: '100',
    tax: '0',
    total: '100',
    paid: '0',
    currency: 'USD',
    invoiceDate: isoDate(-35),
    dueDate: isoDate(-5),
    taxType: 'EXEMPT',
    productId: inactive,
  });

  const transaction = (
    invoiceId: string,
    type: string,
    amount: string,
    method: string,
    status: string,
    at: string,
  ) =>
    insertOne<string>(
      db,
      `INSERT INTO invoice_transactions (org_id, invoice_id, type, amount, method, status, reference, created_at,
         updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
      [orgId, invoiceId, type, amount, method, status, `${label}-ref-${amount}`, at],
    );
  const full = await transaction(paid, 'PAYMENT', '113', 'CARD', 'COMPLETED', '2026-02-10T00:00:00Z');
  const partial = await transaction(
    partiallyPaid,
    'PAYMENT',
    '50',
    'BANK_TRANSFER',
    'COMPLETED',
    '2026-02-11T00:00:00Z',
  );
  const failed = await transaction(posted, 'PAYMENT', '25', 'CARD', 'FAILED', '2026-02-12T00:00:00Z');
  await transaction(partiallyPaid, 'CREDIT_MEMO', '5', 'EXTERNAL', 'COMPLETED', '2026-02-09T00:00:00Z');

  return {
    orgId,
    label,
    customers: { quebec, ontario, newYork },
    products: { flat, tiered, inactive },
    subscriptions: { quebec: subQuebec, ontario: subOntario, newYork: subNewYork },
    invoices: { posted, partiallyPaid, paid, draft, postedUsd },
    payments: { partial, full, failed },
  };
}

/**
 * A fingerprint of every table's content: md5 over each table's rows in a fixed order. Equal
 * before and after means nothing was inserted, updated or deleted anywhere.
 */
export async function databaseChecksum(db: Queryable): Promise<Record<string, string>> {
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  const checksums: Record<string, string> = {};
  for (const { name } of tables) {
    const { rows } = await db.query<{ md5: string; count: number }>(
      `SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS md5, count(*) AS count FROM "${name}" t`,
    );
    checksums[name] = `${rows[0]!.count}:${rows[0]!.md5}`;
  }
  return checksums;
}
