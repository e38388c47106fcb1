import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling } from '../../libs/billing/index.js';
import { createProduct } from '../../libs/catalog/index.js';
import type { Queryable } from '../../libs/db/index.js';
import { ApiError } from '../../libs/errors/index.js';
import { createOrganization } from '../../libs/organizations/index.js';
import { cancelSubscription, changeSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { insertInvoice, insertProduct, insertSubscription } from '../helpers/billing-fixtures.js';
import { consoleEnv, inProcessConsole } from '../helpers/console.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { callTool } from '../mcp/mcp-server.js';
import { createSession, open } from '../portal/support.js';
import { basicCatalog, customerIn, invoicesOf, productIn, subscribe } from './fixtures.js';

/**
 * A currency the billing code cannot round (no ISO 4217 minor unit in libs/money's table) is
 * refused wherever a currency comes in; rows stored before that check (a migration cannot make
 * them billable) park their subscription with the reason instead of failing every run, and every
 * read of them answers 4xx or what it can, never a 500.
 */

let api: TestApi;
let org: TestOrg;
let customerId: number;
let env: Record<string, string>;
const run = inProcessConsole(() => env);
const usage = (tx: Queryable) => new PostgresUsageAggregator(tx);

/** A subscription stored in `currency` before currencies were checked: one licensed and one metered item. */
async function legacySubscription(currency: string, start: Date) {
  const db = api.platform.db;
  const seats = await insertProduct(db, org.orgId, { name: 'Legacy seats', unitPrice: '10', currency });
  const calls = await insertProduct(db, org.orgId, {
    name: 'Legacy calls',
    unitPrice: '0.5',
    currency,
    pricingType: 'usage',
  });
  const subscription = await insertSubscription(db, org.orgId, {
    customerId,
    currency,
    startDate: start,
    items: [
      { productId: seats.id, quantity: 2, unitPrice: '10' },
      { productId: calls.id, usageType: 'metered', unitPrice: '0.5' },
    ],
  });
  return { ...subscription, seats: seats.id };
}

beforeAll(async () => {
  api = await startTestApi({ redis: false });
  org = await createTestOrg(api.platform.db);
  customerId = await customerIn(api.platform.db, org.orgId);
  env = consoleEnv(api.database.url);
}, 60_000);
afterAll(() => api?.close());

describe('currencies at the door', () => {
  it('a product or an organization in a currency without a known minor unit is a 422 naming currency', async () => {
    const db = api.platform.db;
    for (const currency of ['XYZ', 'CLF']) {
      const product = await run(
        'product',
        'create',
        '--org',
        String(org.orgId),
        '--name',
        'Gold',
        '--unit-price',
        '10',
        '--pricing-type',
        'recurring',
        '--currency',
        currency,
      );
      expect(product.code, currency).toBe(2);
      expect(product.stderr).toMatch(/--currency: Must be a currency with a known minor unit: .*CAD/);
      const organization = await run('org', 'create', '--name', 'Funds', '--currency', currency);
      expect(organization.code, currency).toBe(2);
      expect(organization.stderr).toMatch(/--currency: Must be a currency with a known minor unit/);
      // the functions behind the console refuse it too, whoever calls them
      await expect(
        createProduct(db, org.orgId, { name: 'Gold', pricing_type: 'recurring', currency }),
      ).rejects.toMatchObject({ status: 422, details: [expect.objectContaining({ field: 'currency' })] });
      await expect(createOrganization(db, { name: 'Funds', currency })).rejects.toMatchObject({
        status: 422,
        details: [expect.objectContaining({ field: 'currency' })],
      });
    }
    // every currency of the table is taken, 0 and 3 decimals alike
    for (const currency of ['JPY', 'KWD', 'USD']) {
      await expect(
        createProduct(db, org.orgId, { name: currency, pricing_type: 'recurring', currency }),
      ).resolves.toMatchObject({ currency });
    }
  });

  it("a product defaulting to an organization's stored unbillable currency is refused, naming currency", async () => {
    const db = api.platform.db;
    const legacy = await createTestOrg(db);
    await db.query(`UPDATE organizations SET default_currency = 'XYZ' WHERE id = $1`, [legacy.orgId]);
    const refused = await createProduct(db, legacy.orgId, { name: 'Plan', pricing_type: 'recurring' }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 422, details: [expect.objectContaining({ field: 'currency' })] });
    expect((refused as ApiError).details![0]!.message).toMatch(/default currency XYZ cannot be billed/);
  });

  it('a product stored in such a currency cannot be put on a subscription, nor added by a change', async () => {
    const db = api.platform.db;
    const legacy = await insertProduct(db, org.orgId, { name: 'Legacy', currency: 'XYZ' });
    await expect(
      subscribe(db, org.orgId, { customer_id: customerId, items: [{ product_id: legacy.id }] }),
    ).rejects.toMatchObject({
      status: 422,
      details: [
        {
          field: 'items.0.product_id',
          message: `Product ${legacy.id} is priced in XYZ, a currency that cannot be billed.`,
          code: 'invalid_value',
        },
      ],
    });
    const { seats } = await basicCatalog(db, org.orgId);
    const running = await subscribe(
      db,
      org.orgId,
      {
        customer_id: customerId,
        items: [{ product_id: seats }],
        start_date: new Date(Date.now() - 86_400_000),
      },
      new Date(),
    );
    const change = await api.request({
      method: 'POST',
      path: `/subscriptions/${running.id}/changes`,
      key: org.apiKey,
      payload: { items: [{ id: running.items[0]!.id }, { product_id: legacy.id }], preview: true },
    });
    expect(change.statusCode, change.body).toBe(422);
    expect(change.json().details).toEqual([
      {
        field: 'items.1.product_id',
        message: `Product ${legacy.id} is priced in XYZ, a currency that cannot be billed.`,
        code: 'invalid_value',
      },
    ]);
  });
});

describe('rows stored in an unbillable currency', () => {
  it('its reads answer 409 with the reason, MCP a tool error, the portal leaves its figures out', async () => {
    const start = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 - 86_400_000);
    const legacy = await legacySubscription('XYZ', start);
    const reason = /Cannot be invoiced: its currency XYZ has no known minor unit/;
    for (const path of ['upcoming-invoice', 'usage']) {
      const response = await api.request({
        method: 'GET',
        path: `/subscriptions/${legacy.id}/${path}`,
        key: org.apiKey,
      });
      expect(response.statusCode, `${path}: ${response.body}`).toBe(409);
      expect(response.json()).toMatchObject({
        error_code: 'CONFLICT',
        detail: expect.stringMatching(reason),
      });
    }
    for (const preview of [true, false]) {
      const change = await api.request({
        method: 'POST',
        path: `/subscriptions/${legacy.id}/changes`,
        key: org.apiKey,
        payload: { items: [{ id: legacy.itemIds[0]!, quantity: 3 }, { id: legacy.itemIds[1]! }], preview },
      });
      expect(change.statusCode, change.body).toBe(409);
      expect(change.json().detail).toMatch(reason);
    }
    // the customer's portal shows the subscription without figures, rather than failing
    const session = await createSession(api, org.apiKey, { customer_id: customerId });
    const page = await open(api, session.url);
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('Upcoming invoice');
    for (const tool of ['preview_upcoming_invoice', 'get_subscription_usage']) {
      expect(await callTool(api, org.apiKey, tool, { subscription_id: legacy.id }), tool).toEqual({
        content: [{ type: 'text', text: expect.stringMatching(reason) }],
        isError: true,
      });
    }
  });

  it('the billing run parks it with the reason (exit 0) and bills everyone else; cancel says why', async () => {
    const db = api.platform.db;
    const start = new Date('2026-01-01T00:00:00Z');
    const legacy = await legacySubscription('XYZ', start);
    const { seats } = await basicCatalog(db, org.orgId);
    const good = await subscribe(db, org.orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: start,
    });
    for (const now of ['2026-02-02', '2026-02-03']) {
      const billed = await run('billing', 'run', '--now', now, '--org', String(org.orgId));
      expect(billed.code, billed.stderr).toBe(0);
      expect(billed.json().failures).toEqual([]);
      expect(billed.json().parked).toContainEqual({
        subscription_id: legacy.id,
        parked_at: expect.any(String),
        reason: 'its currency XYZ has no known minor unit, so nothing can be billed in it',
      });
    }
    expect(await invoicesOf(db, good.id)).toHaveLength(1);
    expect(await invoicesOf(db, legacy.id)).toHaveLength(0);

    const refused = await run('subscription', 'cancel', '--id', String(legacy.id), '--now', '2026-02-10');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is parked: .*\(its currency XYZ has no known minor unit/);
    const gone = await run(
      'subscription',
      'cancel',
      '--id',
      String(legacy.id),
      '--without-invoicing',
      '--now',
      '2026-02-10',
    );
    expect(gone.code, gone.stderr).toBe(0);
    expect(gone.json()).toMatchObject({ id: legacy.id, status: 'canceled' });
  });

  it('a parked subscription canceled without invoicing is no longer listed by the runs', async () => {
    const db = api.platform.db;
    const legacy = await legacySubscription('XYZ', new Date('2026-01-01T00:00:00Z'));
    const billAt = (now: string) =>
      runBilling(db, { usage, orgId: org.orgId, subscriptionIds: [legacy.id], now: new Date(now) });
    expect((await billAt('2026-02-02T00:00:00Z')).parked.map((p) => p.subscription_id)).toEqual([legacy.id]);
    await db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: legacy.id,
        withoutInvoicing: true,
        now: new Date('2026-02-10T00:00:00Z'),
      }),
    );
    // the operator's way out was taken: nothing is left for anyone to act on
    expect((await billAt('2026-02-11T00:00:00Z')).parked).toEqual([]);
  });

  it('a cancel now of one whose running period cannot be invoiced is a 409 that cancels nothing', async () => {
    const db = api.platform.db;
    const start = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 - 86_400_000);
    const legacy = await legacySubscription('CLF', start);
    const refused = await run('subscription', 'cancel', '--id', String(legacy.id));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /running period cannot be invoiced \(its currency CLF has no known minor unit.*\); nothing was canceled/,
    );
    const { rows } = await db.query('SELECT status FROM subscriptions WHERE id = $1', [legacy.id]);
    expect(rows).toEqual([{ status: 'active' }]);
    // a billing run inside the caller's transaction (the console's cancel) throws the same class
    await expect(
      db.transaction((tx) =>
        runBilling(tx, {
          usage,
          orgId: org.orgId,
          subscriptionIds: [legacy.id],
          now: new Date(start.getTime() + 40 * 86_400_000),
        }),
      ),
    ).rejects.toMatchObject({ status: 409, reason: expect.stringMatching(/currency CLF/) });
  });

  it('an invoice issued in one before still prints, sums and takes a payment', async () => {
    const db = api.platform.db;
    const legacy = await legacySubscription('XYZ', new Date('2025-01-01T00:00:00Z'));
    const invoice = await insertInvoice(db, org.orgId, {
      customerId,
      subscriptionId: legacy.id,
      currency: 'XYZ',
      items: [
        { productId: legacy.seats, quantity: '2', unitPrice: '10.005', taxRate: '0.13', taxType: 'HST' },
      ],
    });
    for (const path of [
      `/invoices/${invoice.id}`,
      `/invoices/${invoice.id}/html`,
      `/invoices/${invoice.id}/pdf`,
    ]) {
      const response = await api.request({ method: 'GET', path, key: org.apiKey });
      expect(response.statusCode, `${path}: ${response.body.slice(0, 200)}`).toBe(200);
    }
    const summary = await callTool(api, org.apiKey, 'revenue_summary', {});
    expect(summary.isError).toBe(false);
    expect(JSON.parse(summary.content[0]!.text).by_currency).toContainEqual(
      expect.objectContaining({ currency: 'XYZ', billed: invoice.total }),
    );
    const paid = await run('payment', 'record', '--invoice', invoice.id, '--amount', '10.0001');
    expect(paid.code, paid.stderr).toBe(0);
    expect(paid.json().invoice).toMatchObject({ status: 'PARTIALLY_PAID', amount_paid: '10.00010000' });
  });
});

describe('other stored data a run refuses', () => {
  it('a scheduled change that no longer fits an invoice parks its subscription instead of failing every run', async () => {
    const db = api.platform.db;
    const whale = await productIn(db, org.orgId, {
      name: 'Whale seats',
      unit_price: '900000',
      pricing_type: 'recurring',
      currency: 'CAD',
    });
    const subscription = await subscribe(
      db,
      org.orgId,
      {
        customer_id: customerId,
        items: [{ product_id: whale }],
        start_date: new Date('2026-03-01T00:00:00Z'),
      },
      new Date('2026-03-01T00:00:00Z'),
    );
    const item = subscription.items[0]!.id;
    await changeSubscription(db, {
      subscriptionId: subscription.id,
      orgId: org.orgId,
      change: { items: [{ id: item, quantity: 2 }], effective: 'period_end' },
      now: new Date('2026-03-10T00:00:00Z'),
    });
    // as a corrupted row would have it: a million seats, checked by no door
    await db.query(
      `UPDATE subscription_pending_changes SET items = jsonb_set(items, '{0,quantity}', '1000000')
        WHERE subscription_id = $1`,
      [subscription.id],
    );
    for (const now of ['2026-04-02', '2026-04-03']) {
      const billed = await run('billing', 'run', '--now', now, '--org', String(org.orgId));
      expect(billed.code, billed.stderr).toBe(0);
      expect(billed.json().failures).toEqual([]);
      expect(billed.json().parked).toContainEqual({
        subscription_id: subscription.id,
        parked_at: expect.any(String),
        reason: expect.stringMatching(
          /^items\.0\.quantity: 1000000 x Whale seats is more than an invoice can hold/,
        ),
      });
    }
  });
});
