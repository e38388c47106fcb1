import type { Database } from '../../libs/db/index.js';
import { INVOICE_STATUSES } from '../../libs/schemas/index.js';

export interface BenchData {
  orgId: number;
  customers: number;
  invoices: number;
  /** A customer with POSTED invoices, for the filtered list. */
  postedCustomerId: number;
  /** A sample of invoice ids, for the PDF scenario. */
  invoiceIds: string[];
}

/**
 * One organization with `customers` customers (one subscription each, with a licensed item) and
 * `invoices` invoices with two items each, spread over the subscriptions, in set-based SQL
 * (generate_series): the benchmark's data loads in seconds. Bench only: the product writes
 * through libs/billing. created_at runs back in time one minute per invoice, so list order is
 * realistic, and a small second organization checks that org_id filtering is in the plans.
 */
export async function loadBenchData(
  db: Database,
  options: { customers: number; invoices: number; progress?: (message: string) => void },
): Promise<BenchData> {
  const progress = options.progress ?? (() => {});
  const { customers, invoices } = options;

  const orgId = await db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: number }>(
      `INSERT INTO organizations (name, plan, address_line1, city, state_province, postal_code, country, tax_id)
       VALUES ('Bench Billing Inc.', 'scale', '1 Bench Street', 'Montréal', 'QC', 'H2X 1Y4', 'CA', 'RT0001')
       RETURNING id`,
    );
    const org = rows[0]!.id;
    await tx.query(
      `INSERT INTO products (org_id, name, sku, unit_price, pricing_type, category)
       SELECT $1, 'Product ' || g, 'SKU-' || g, 10 * g, 'recurring', 'software' FROM generate_series(1, 5) g`,
      [org],
    );
    progress(`loading ${customers} customers`);
    await tx.query(
      `INSERT INTO customers (org_id, name, email, address_line1, city, state_province, postal_code, country, created_at)
       SELECT $1, 'Customer ' || g, 'customer' || g || '@example.com', g || ' Main Street',
              CASE WHEN g % 3 = 0 THEN 'Toronto' WHEN g % 3 = 1 THEN 'Montréal' ELSE 'New York' END,
              CASE WHEN g % 3 = 0 THEN 'ON' WHEN g % 3 = 1 THEN 'QC' ELSE 'NY' END,
              'A1A 1A1', CASE WHEN g % 3 = 2 THEN 'US' ELSE 'CA' END,
              now() - make_interval(mins => $2 - g)
         FROM generate_series(1, $2) g`,
      [org, customers],
    );
    await tx.query(
      `INSERT INTO subscriptions (org_id, customer_id, status, title, start_date, next_billing_date, billing_period,
         billing_anchor_day, current_period_start, current_period_end, created_at)
       SELECT $1, c.id, 'active', 'Plan', '2020-01-01', '2030-01-01', 'monthly', 1, '2029-12-01', '2030-01-01', c.created_at
         FROM customers c WHERE c.org_id = $1`,
      [org],
    );
    await tx.query(
      `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type)
       SELECT $1, s.id, (SELECT min(id) FROM products WHERE org_id = $1), 1, 10, 'licensed'
         FROM subscriptions s WHERE s.org_id = $1`,
      [org],
    );
    progress(`loading ${invoices} invoices with 2 items each`);
    // invoice n belongs to subscription (n mod customers) and is that subscription's k-th period
    await tx.query(
      `WITH subs AS (
         SELECT id, customer_id, row_number() OVER (ORDER BY id) - 1 AS n FROM subscriptions WHERE org_id = $1
       )
       INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start,
         period_end, due_date, status, subtotal, tax_amount, total, amount_paid, currency, created_at, updated_at)
       SELECT $1, 'INV-' || lpad(g::text, 6, '0'), s.customer_id, s.id,
              d, d, (d + interval '1 month' - interval '1 day')::date, (d + 30),
              ($4::text[])[1 + g % 7], 100, 14.975, 114.975,
              CASE WHEN ($4::text[])[1 + g % 7] IN ('PAID', 'REFUNDED', 'PARTIALLY_REFUNDED') THEN 114.975
                   WHEN ($4::text[])[1 + g % 7] = 'PARTIALLY_PAID' THEN 50 ELSE 0 END,
              'CAD', now() - make_interval(mins => $2 - g), now() - make_interval(mins => $2 - g)
         FROM generate_series(1, $2) g
         JOIN subs s ON s.n = (g - 1) % $3
         CROSS JOIN LATERAL (SELECT ('2020-01-01'::date + make_interval(months => ((g - 1) / $3)::int))::date AS d) period`,
      [org, invoices, customers, INVOICE_STATUSES],
    );
    await tx.query(
      `INSERT INTO invoice_items (org_id, invoice_id, position, product_id, description, quantity, unit_price,
         line_total_pre_tax, tax_amount, tax_type)
       SELECT $1, i.id, p.position, (SELECT min(id) FROM products WHERE org_id = $1),
              CASE p.position WHEN 0 THEN 'Plan (monthly)' ELSE 'Usage above included units' END,
              CASE p.position WHEN 0 THEN 1 ELSE 2500 END, CASE p.position WHEN 0 THEN 90 ELSE 0.004 END,
              CASE p.position WHEN 0 THEN 90 ELSE 10 END, CASE p.position WHEN 0 THEN 13.4775 ELSE 1.4975 END, 'GST_QST'
         FROM invoices i CROSS JOIN (VALUES (0), (1)) p(position)
        WHERE i.org_id = $1`,
      [org],
    );
    await tx.query('UPDATE organizations SET invoice_number_seq = $2 WHERE id = $1', [org, invoices]);
    return org;
  });

  // a neighbour organization, so every plan has to filter by org_id
  const neighbour = await db.query<{ id: number }>(
    "INSERT INTO organizations (name) VALUES ('Neighbour') RETURNING id",
  );
  await db.query(
    `INSERT INTO customers (org_id, name) SELECT $1, 'Neighbour ' || g FROM generate_series(1, 1000) g`,
    [neighbour.rows[0]!.id],
  );

  progress('vacuum analyze');
  // index-only scans need the visibility map, which VACUUM sets (autovacuum would, later)
  await db.query('VACUUM ANALYZE');

  const posted = await db.query<{ customer_id: number }>(
    "SELECT customer_id FROM invoices WHERE org_id = $1 AND status = 'POSTED' LIMIT 1",
    [orgId],
  );
  const sample = await db.query<{ id: string }>(
    'SELECT id FROM invoices WHERE org_id = $1 ORDER BY random() LIMIT 1000',
    [orgId],
  );
  return {
    orgId,
    customers,
    invoices,
    postedCustomerId: posted.rows[0]!.customer_id,
    invoiceIds: sample.rows.map((r) => r.id),
  };
}
