import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCreditGrant,
  getCreditBalance,
  getDailyUsage,
  getSubscriptionUsage,
  previewUpcomingInvoice,
} from '../../libs/billing/index.js';
import { type PortalUsageSource, portalUsageSource } from '../../libs/portal/index.js';
import type { CreateCreditGrant } from '../../libs/schemas/index.js';
import { cancelSubscription } from '../../libs/subscriptions/index.js';
import type { UsageReadStores } from '../../libs/usage/index.js';
import { basicCatalog, customerIn, recordUsage, subscribe } from '../billing/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { readStoresOver } from '../helpers/read-stores.js';

/**
 * The portal's usage source (libs/portal/usage-source.ts) on the read-back the public API uses, on
 * a database of this file's own: it shows what the API answers, field for field, and leaves out
 * what cannot be priced rather than failing the page.
 */
let database: TestDatabase;
let stores: UsageReadStores;
let source: PortalUsageSource;
let orgId: number;
let catalog: { seats: number; apiCalls: number };

beforeAll(async () => {
  database = await createTestDatabase('portal-usage-source');
  stores = readStoresOver(database.db);
  source = portalUsageSource(database.db, stores);
  orgId = (await createTestOrg(database.db)).orgId;
  catalog = await basicCatalog(database.db, orgId);
});
afterAll(async () => {
  await stores?.close();
  await database?.drop();
});

const today = () => new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000);

const grant = (customerId: number, input: CreateCreditGrant) =>
  database.db.transaction((tx) => createCreditGrant(tx, { orgId, customerId, input }));

/** The customer's subscription to `productId` from the start of today (UTC), made today. */
function subscribedToday(customerId: number, productId: number) {
  const start = today();
  return subscribe(
    database.db,
    orgId,
    { customer_id: customerId, items: [{ product_id: productId }], start_date: start },
    start,
  );
}

/** A subscription of the customer to API calls from today, with `quantity` calls a second in. */
async function usedToday(customerId: number, quantity: string) {
  const subscription = await subscribedToday(customerId, catalog.apiCalls);
  const at = new Date(today().getTime() + 1000).toISOString();
  await recordUsage(database.db, orgId, subscription.items[0]!.id, quantity, at);
  return subscription;
}

describe('read', () => {
  it("answers the subscription's usage, daily series and upcoming invoice as the API reads them", async () => {
    const { db } = database;
    const customerId = await customerIn(db, orgId);
    const subscription = await usedToday(customerId, '150');
    const read = await source.read(orgId, subscription.id);
    const usage = await getSubscriptionUsage(db, stores, orgId, subscription.id);
    const upcoming = await previewUpcomingInvoice(db, stores, orgId, subscription.id);
    expect(read).toEqual({
      usage: {
        period_start: usage.period_start,
        period_end: usage.period_end,
        as_of: expect.any(String),
        currency: 'CAD',
        items: usage.items,
      },
      daily: await getDailyUsage(db, stores, orgId, subscription.id),
      upcoming: {
        invoice_date: upcoming.invoice_date,
        currency: 'CAD',
        lines: upcoming.lines,
        subtotal: '125.00000000',
        tax: upcoming.tax,
        total: upcoming.total,
        credits_applied: '0.00000000',
        amount_due: upcoming.total,
      },
    });
    expect(read!.usage.period_start < read!.usage.period_end).toBe(true);
    expect(Date.parse(read!.usage.as_of)).toBeGreaterThan(Date.parse(read!.usage.period_start));
    expect(read!.upcoming!.tax).not.toBe('0.00000000');
    expect(read!.daily.some((day) => day.quantity !== '0')).toBe(true);
  });

  it('says what credits would pay of the upcoming invoice, and reads usage as of the moment it is asked', async () => {
    const { db } = database;
    const customerId = await customerIn(db, orgId);
    const subscription = await usedToday(customerId, '10');
    await grant(customerId, { amount: '4.00', category: 'promotional' });
    const before = Date.now();
    const read = await source.read(orgId, subscription.id);
    const after = Date.now();
    expect(Date.parse(read!.usage.as_of)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(read!.usage.as_of)).toBeLessThanOrEqual(after);
    // 10 x 1.00 + 13% HST = 11.30, of which the credits pay 4.00
    expect(read!.upcoming).toMatchObject({
      total: '11.30000000',
      credits_applied: '4.00000000',
      amount_due: '7.30000000',
    });
  });

  it('shows usage without an upcoming invoice for a subscription that cannot be invoiced, or will not be', async () => {
    const { db } = database;
    const unbillable = await customerIn(db, orgId);
    const subscription = await usedToday(unbillable, '3');
    // a region the tax table does not know: usage is priced before tax, the invoice waits
    await db.query(`UPDATE customers SET state_province = 'ZZ' WHERE id = $1`, [unbillable]);
    const read = await source.read(orgId, subscription.id);
    expect(read?.usage.items).toHaveLength(1);
    expect(read?.upcoming).toBeNull();

    const canceled = await subscribedToday(await customerIn(db, orgId), catalog.apiCalls);
    await db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: canceled.id, orgId, withoutInvoicing: true }),
    );
    const ended = await source.read(orgId, canceled.id);
    expect(ended?.usage.items).toHaveLength(1);
    expect(ended?.upcoming).toBeNull();
  });

  it('hides no other failure: an unknown subscription or customer is an error, not an empty card', async () => {
    await expect(source.read(orgId, 987_654_321)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(source.credits(orgId, 987_654_321)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('is undefined for a subscription without a metered item', async () => {
    const customerId = await customerIn(database.db, orgId);
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: catalog.seats }],
    });
    expect(await source.read(orgId, subscription.id)).toBeUndefined();
  });
});

describe('credits', () => {
  it('lists the pending and active grants newest first, with what is available and projected', async () => {
    const { db } = database;
    const customerId = await customerIn(db, orgId);
    // a seat a month: the upcoming invoice is what the credits are projected to pay
    await subscribedToday(customerId, catalog.seats);
    await grant(customerId, {
      amount: '40.00',
      category: 'promotional',
      name: 'First',
      expires_at: '2099-03-15T00:00:00Z',
    });
    await grant(customerId, { amount: '100.00', category: 'paid', name: 'Second' });
    await grant(customerId, { amount: '5.00', category: 'promotional', name: 'Third' });
    const credits = await source.credits(orgId, customerId);
    const balance = await getCreditBalance(db, stores, orgId, customerId);
    expect(balance.available).not.toBe(balance.projected);
    expect(credits).toEqual({
      currency: 'CAD',
      available: balance.available,
      projected: balance.projected,
      grants: [
        { name: 'Third', status: 'ACTIVE', amount: '5.00000000', remaining: '5.00000000', expires_at: null },
        {
          name: 'Second',
          status: 'PENDING',
          amount: '100.00000000',
          remaining: '100.00000000',
          expires_at: null,
        },
        {
          name: 'First',
          status: 'ACTIVE',
          amount: '40.00000000',
          remaining: '40.00000000',
          expires_at: '2099-03-15T00:00:00.000Z',
        },
      ],
    });
    expect(credits.available).toBe('45.00000000');
  });

  it('shows the grants without a balance for a customer whose subscription cannot be invoiced', async () => {
    const { db } = database;
    const customerId = await customerIn(db, orgId);
    await subscribedToday(customerId, catalog.seats);
    await grant(customerId, { amount: '7.00', category: 'promotional', name: 'Welcome' });
    // a region the tax table does not know: nothing can be priced for it
    await db.query(`UPDATE customers SET state_province = 'ZZ' WHERE id = $1`, [customerId]);
    expect(await source.credits(orgId, customerId)).toEqual({
      currency: 'CAD',
      available: null,
      projected: null,
      grants: [
        {
          name: 'Welcome',
          status: 'ACTIVE',
          amount: '7.00000000',
          remaining: '7.00000000',
          expires_at: null,
        },
      ],
    });
  });
});
