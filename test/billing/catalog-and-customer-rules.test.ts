import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCreditGrant } from '../../libs/billing/index.js';
import { createProduct, getProduct, updateProduct } from '../../libs/catalog/index.js';
import { createCustomer, getCustomer, updateCustomer } from '../../libs/customers/index.js';
import { CreateCustomer } from '../../libs/schemas/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';

/*
 * A customer or product is found only within its organization: an update through the console's
 * functions with another organization's id is not found and changes nothing. A product update
 * never changes a price (libs/catalog/product-admin.ts, UpdateProduct).
 */

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase('catalog_customer_rules');
});
afterAll(() => database.drop());

describe('updateCustomer within an organization', () => {
  it("another organization's customer is not found, and keeps its fields", async () => {
    const mine = await createTestOrg(database.db);
    const theirs = await createTestOrg(database.db);
    const customer = await createCustomer(
      database.db,
      theirs.orgId,
      CreateCustomer.parse({ name: 'Theirs', country: 'CA', state_province: 'ON' }),
    );
    for (const change of [
      {}, // no field: read back as it is, still only within the organization
      { name: 'Taken' },
      { state_province: 'QC' },
      // a region or country wrong for that customer is still not found, not a 422 that reveals it
      { state_province: 'NY' },
      { country: 'US' },
      { country: 'US', state_province: 'NY' },
    ]) {
      await expect(
        updateCustomer(database.db, { customerId: customer.id, orgId: mine.orgId }, change),
        JSON.stringify(change),
      ).rejects.toMatchObject({
        status: 404,
        code: 'NOT_FOUND',
        message: `Customer ${customer.id} not found.`,
      });
    }
    await expect(getCustomer(database.db, mine.orgId, customer.id)).rejects.toMatchObject({ status: 404 });
    expect(await getCustomer(database.db, theirs.orgId, customer.id)).toMatchObject({
      name: 'Theirs',
      country: 'CA',
      state_province: 'ON',
    });
    // within its own organization the same update applies
    await expect(
      updateCustomer(database.db, { customerId: customer.id, orgId: theirs.orgId }, { name: 'Renamed' }),
    ).resolves.toMatchObject({ name: 'Renamed' });
  });
});

describe('updateCustomer: text Postgres cannot store', () => {
  it('is refused with 422 naming the field, the customer kept', async () => {
    const { orgId } = await createTestOrg(database.db);
    const customer = await createCustomer(database.db, orgId, CreateCustomer.parse({ name: 'Clean' }));
    await expect(
      updateCustomer(database.db, { customerId: customer.id, orgId }, { city: 'Nul\u0000ville' }),
    ).rejects.toMatchObject({
      status: 422,
      code: 'VALIDATION_ERROR',
      details: [expect.objectContaining({ field: 'city' })],
    });
    expect(await getCustomer(database.db, orgId, customer.id)).toMatchObject({ city: null });
  });
});

describe('updateCustomer: the region is checked as it will be', () => {
  it('a new country with the region emptied (null) is checked without the old region', async () => {
    const { orgId } = await createTestOrg(database.db);
    const customer = await createCustomer(
      database.db,
      orgId,
      CreateCustomer.parse({ name: 'Mover', country: 'CA', state_province: 'ON' }),
    );
    // ON is no US state, but the update empties it: a region left out is allowed
    await expect(
      updateCustomer(
        database.db,
        { customerId: customer.id, orgId },
        { country: 'US', state_province: null },
      ),
    ).resolves.toMatchObject({ country: 'US', state_province: null });
  });

  it('a new country alone is checked with the region kept, a new region with the country kept', async () => {
    const { orgId } = await createTestOrg(database.db);
    const customer = await createCustomer(
      database.db,
      orgId,
      CreateCustomer.parse({ name: 'Half mover', country: 'CA', state_province: 'ON' }),
    );
    const ref = { customerId: customer.id, orgId };
    await expect(updateCustomer(database.db, ref, { country: 'US' })).rejects.toMatchObject({
      status: 422,
      details: [expect.objectContaining({ field: 'state_province' })],
    });
    // and a new region alone is checked against the country kept
    await expect(updateCustomer(database.db, ref, { state_province: 'NY' })).rejects.toMatchObject({
      status: 422,
      details: [expect.objectContaining({ field: 'state_province' })],
    });
    const american = await createCustomer(
      database.db,
      orgId,
      CreateCustomer.parse({ name: 'Stayer', country: 'US', state_province: 'NY' }),
    );
    await expect(
      updateCustomer(database.db, { customerId: american.id, orgId }, { state_province: 'ON' }),
    ).rejects.toMatchObject({ status: 422, details: [expect.objectContaining({ field: 'state_province' })] });
    expect(await getCustomer(database.db, orgId, customer.id)).toMatchObject({
      country: 'CA',
      state_province: 'ON',
    });
    await expect(updateCustomer(database.db, ref, { state_province: 'QC' })).resolves.toMatchObject({
      country: 'CA',
      state_province: 'QC',
    });
  });
});

describe('updateProduct', () => {
  it('never changes a price: unit_price is refused with 422 naming it, the price kept', async () => {
    const { orgId } = await createTestOrg(database.db);
    const product = await createProduct(database.db, orgId, {
      name: 'Seats',
      unit_price: '10.00',
      pricing_type: 'recurring',
    });
    // as an untyped caller sends it: the type has no unit_price, the parse must refuse it
    await expect(
      updateProduct(database.db, { productId: product.id, orgId }, {
        name: 'Seats v2',
        unit_price: '1.00',
      } as never),
    ).rejects.toMatchObject({
      status: 422,
      code: 'VALIDATION_ERROR',
      details: [expect.objectContaining({ field: 'unit_price' })],
    });
    expect(await getProduct(database.db, orgId, product.id)).toMatchObject({
      name: 'Seats',
      unit_price: '10.00000000',
    });
  });

  it("another organization's product is not found, and keeps its fields", async () => {
    const mine = await createTestOrg(database.db);
    const theirs = await createTestOrg(database.db);
    const product = await createProduct(database.db, theirs.orgId, {
      name: 'Theirs',
      pricing_type: 'recurring',
    });
    await expect(
      updateProduct(
        database.db,
        { productId: product.id, orgId: mine.orgId },
        { name: 'Taken', is_active: false },
      ),
    ).rejects.toMatchObject({ status: 404, message: `Product ${product.id} not found.` });
    expect(await getProduct(database.db, theirs.orgId, product.id)).toMatchObject({
      name: 'Theirs',
      is_active: true,
    });
  });
});

describe('updateProduct within its organization', () => {
  it('changes only the fields given, the others kept', async () => {
    const { orgId } = await createTestOrg(database.db);
    const product = await createProduct(database.db, orgId, {
      name: 'Seats',
      pricing_type: 'recurring',
      sku: 'SEAT-1',
      description: 'One seat',
      external_id: 'ext-1',
    });
    const ref = { productId: product.id, orgId };
    expect(await updateProduct(database.db, ref, { is_active: false })).toMatchObject({
      name: 'Seats',
      sku: 'SEAT-1',
      description: 'One seat',
      unit_label: 'unit',
      external_id: 'ext-1',
      is_active: false,
    });
    expect(await updateProduct(database.db, ref, { name: 'Seats v2', sku: '' })).toMatchObject({
      name: 'Seats v2',
      sku: '',
      description: 'One seat',
      is_active: false,
    });
  });

  it('with no field given, returns the product untouched, updated_at included', async () => {
    const { orgId } = await createTestOrg(database.db);
    const product = await createProduct(database.db, orgId, { name: 'Still', pricing_type: 'recurring' });
    const read = await updateProduct(database.db, { productId: product.id, orgId }, {});
    expect(read).toEqual(product);
  });
});

describe('createProduct', () => {
  it('puts a product in the usage category when usage-priced, else in software, unless given one', async () => {
    const { orgId } = await createTestOrg(database.db);
    const usage = await createProduct(database.db, orgId, { name: 'Calls', pricing_type: 'usage' });
    const recurring = await createProduct(database.db, orgId, { name: 'Seats', pricing_type: 'recurring' });
    const given = await createProduct(database.db, orgId, {
      name: 'Support',
      pricing_type: 'recurring',
      category: 'service',
    });
    expect([usage.category, recurring.category, given.category]).toEqual(['usage', 'software', 'service']);
  });
});

describe("a customer's credit_balance", () => {
  it("counts only the grants effective now, not expired, in the organization's currency", async () => {
    const { orgId } = await createTestOrg(database.db);
    const customer = await createCustomer(
      database.db,
      orgId,
      CreateCustomer.parse({ name: 'Credited', country: 'CA', state_province: 'ON' }),
    );
    const grant = async (amount: string, extra: Record<string, unknown> = {}) =>
      (
        await database.db.transaction((tx) =>
          createCreditGrant(tx, {
            customerId: customer.id,
            orgId,
            input: { amount, category: 'promotional', ...extra },
          }),
        )
      ).grant;
    await grant('10.00');
    await grant('20.00', { effective_at: '2099-01-01T00:00:00Z' });
    // effective later today is not effective now either
    await grant('160.00', { effective_at: new Date(Date.now() + 10 * 60_000).toISOString() });
    const expired = await grant('40.00', { expires_at: '2099-01-01T00:00:00Z' });
    // expired since yesterday: credit_balance is the ACTIVE grants "effective and not expired" (docs/decisions.md, Credits)
    await database.db.query(
      `UPDATE credit_grants SET effective_at = now() - interval '2 days', expires_at = now() - interval '1 day'
        WHERE id = $1`,
      [expired.id],
    );
    // in another currency than the organization's (as a credit note's grant may be): not counted
    const usd = await grant('80.00');
    await database.db.query(`UPDATE credit_grants SET currency = 'USD' WHERE id = $1`, [usd.id]);
    expect((await getCustomer(database.db, orgId, customer.id)).credit_balance).toBe('10.00000000');
  });
});
