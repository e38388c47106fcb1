import { expect } from 'vitest';
import type { Database } from '../../libs/db/index.js';

const TABLES = [
  'organizations',
  'api_keys',
  'customers',
  'customer_credit_grants',
  'credit_grants',
  'credit_grant_ledger',
  'credit_top_ups',
  'products',
  'product_price_tiers',
  'subscriptions',
  'subscription_items',
  'invoices',
  'invoice_items',
  'invoice_transactions',
  'usage_events',
  'webhook_endpoints',
  'outbox',
  'webhook_events',
  'webhook_attempts',
];

/** Inserts one row in every table of the data model and reads each back; returns the row count per table. */
export async function roundTripEveryTable(db: Database) {
  return db.transaction(async (tx) => {
    const one = async (sql: string, values: unknown[] = []) => (await tx.query(sql, values)).rows[0];
    const org = await one(
      "INSERT INTO organizations (name, plan) VALUES ('Round Trip', 'growth') RETURNING id",
    );
    await one(
      "INSERT INTO api_keys (org_id, environment, key_hash, prefix) VALUES ($1, 'live', repeat('a', 64), 'sk_live_abcd') RETURNING id",
      [org.id],
    );
    const customer = await one(
      "INSERT INTO customers (org_id, name, country) VALUES ($1, 'Ada', 'CA') RETURNING id",
      [org.id],
    );
    const grant = await one(
      `INSERT INTO credit_grants (org_id, customer_id, name, category, currency, amount, remaining, effective_at, status)
       VALUES ($1, $2, 'Welcome', 'promotional', 'CAD', 12.5, 12.5, now(), 'ACTIVE') RETURNING id, remaining`,
      [org.id, customer.id],
    );
    expect(grant.remaining).toBe('12.50000000');
    await one(
      `INSERT INTO credit_grant_ledger (org_id, credit_grant_id, type, amount, remaining_after)
       VALUES ($1, $2, 'grant', 12.5, 12.5) RETURNING id`,
      [org.id, grant.id],
    );
    await one(
      `INSERT INTO credit_top_ups (org_id, customer_id, enabled, threshold, target)
       VALUES ($1, $2, true, 10, 50) RETURNING customer_id`,
      [org.id, customer.id],
    );
    await one(
      `INSERT INTO customer_credit_grants (org_id, customer_id, amount, reference) VALUES ($1, $2, 12.5, 'r1')
       RETURNING id`,
      [org.id, customer.id],
    );
    const product = await one(
      `INSERT INTO products (org_id, name, unit_price, pricing_type, pricing_scheme, pricing_mode, metadata)
       VALUES ($1, 'API calls', 0.001, 'usage', 'tiered', 'graduated', '{"a":1}') RETURNING id, unit_price, metadata`,
      [org.id],
    );
    expect(product.unit_price).toBe('0.00100000');
    expect(product.metadata).toEqual({ a: 1 });
    await one(
      'INSERT INTO product_price_tiers (org_id, product_id, position, up_to, unit_price) VALUES ($1, $2, 0, 100, 1) RETURNING id',
      [org.id, product.id],
    );
    const subscription = await one(
      `INSERT INTO subscriptions (org_id, customer_id, status, start_date, next_billing_date, billing_period,
         billing_anchor_day, current_period_start, current_period_end)
       VALUES ($1, $2, 'active', now(), now() + interval '1 month', 'monthly', 22, now(), now() + interval '1 month')
       RETURNING id`,
      [org.id, customer.id],
    );
    const item = await one(
      `INSERT INTO subscription_items (org_id, subscription_id, product_id, unit_price, usage_type, included_units)
       VALUES ($1, $2, $3, 0.001, 'metered', 1000) RETURNING id, included_units`,
      [org.id, subscription.id, product.id],
    );
    expect(item.included_units).toBe('1000.00000000');
    const invoice = await one(
      `INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start,
         period_end, due_date, status, total, currency)
       VALUES ($1, 'INV-000001', $2, $3, '2026-11-01', '2026-10-01', '2026-10-31', '2026-12-01', 'POSTED', 100, 'CAD')
       RETURNING id, invoice_date, total`,
      [org.id, customer.id, subscription.id],
    );
    expect(invoice.invoice_date).toBe('2026-11-01');
    const line = await one(
      `INSERT INTO invoice_items (org_id, invoice_id, product_id, description, quantity, unit_price, line_total_pre_tax, tax_type)
       VALUES ($1, $2, $3, 'API calls', 2.5, 40, 100, 'HST') RETURNING quantity`,
      [org.id, invoice.id, product.id],
    );
    expect(line.quantity).toBe('2.5000');
    await one(
      `INSERT INTO invoice_transactions (org_id, invoice_id, type, amount, method, status)
       VALUES ($1, $2, 'PAYMENT', 10, 'CARD', 'COMPLETED') RETURNING id`,
      [org.id, invoice.id],
    );
    await one(
      `INSERT INTO usage_events (id, org_id, subscription_item_id, idempotency_key, quantity, occurred_at, recorded_at)
       VALUES (gen_random_uuid(), $1, $2, 'k1', 0.00000001, now(), now()) RETURNING id`,
      [org.id, item.id],
    );
    const endpoint = await one(
      `INSERT INTO webhook_endpoints (org_id, url, events, secret) VALUES ($1, 'https://example.com/h', '{invoice.*}', 'whsec_x')
       RETURNING id, events`,
      [org.id],
    );
    expect(endpoint.events).toEqual(['invoice.*']);
    const outbox = await one(
      `INSERT INTO outbox (org_id, event_type, data) VALUES ($1, 'invoice.posted', '{}') RETURNING id`,
      [org.id],
    );
    const event = await one(
      `INSERT INTO webhook_events (org_id, endpoint_id, outbox_id, event_type, payload) VALUES ($1, $2, $3, 'invoice.posted', '{}')
       RETURNING id`,
      [org.id, endpoint.id, outbox.id],
    );
    await one(
      `INSERT INTO webhook_attempts (org_id, webhook_event_id, attempt, attempted_at, response_code, duration_ms)
       VALUES ($1, $2, 1, now(), 200, 12) RETURNING id`,
      [org.id, event.id],
    );

    const counts: Record<string, number> = {};
    for (const table of TABLES) counts[table] = (await one(`SELECT count(*) AS n FROM ${table}`)).n;
    return counts;
  });
}
