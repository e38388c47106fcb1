import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, updateCustomer } from '../../libs/customers/index.js';
import { CreateCustomer } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { consoleEnv, inProcessConsole } from '../helpers/console.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { callTool } from '../mcp/mcp-server.js';
import { createSession, open } from '../portal/support.js';
import { basicCatalog, invoicesOf, recordUsage, subscribe } from './fixtures.js';

/**
 * A customer's region is one the tax table knows (docs/decisions.md). Canada and the US tax by
 * region: "CA/ZZ" was taxed GST only, a Canadian customer without a province too, "US/ZZ" not at
 * all. A region given is checked at every door (422 naming state_province); one left out (the
 * spec has it optional) is refused where it matters, by subscription create; a customer stored
 * before the check is parked by the billing run with the reason, never taxed at a guess.
 */

let api: TestApi;
let org: TestOrg;
let env: Record<string, string>;
const run = inProcessConsole(() => env);

beforeAll(async () => {
  api = await startTestApi({ redis: false });
  org = await createTestOrg(api.platform.db);
  env = consoleEnv(api.database.url);
}, 60_000);
afterAll(() => api?.close());

const createViaApi = (payload: object) =>
  api.request({ method: 'POST', path: '/customers', key: org.apiKey, payload });

describe('a region the tax table does not know is refused at every door', () => {
  it('POST /customers: 422 naming state_province, in Canada (also by default) and the US', async () => {
    for (const payload of [
      { name: 'Nowhere', country: 'CA', state_province: 'ZZ' },
      { name: 'Nowhere', state_province: 'ZZ' },
      { name: 'Nowhere', country: 'CA', state_province: 'NY' },
      { name: 'Nowhere', country: 'US', state_province: 'ZZ' },
      { name: 'Nowhere', country: 'US', state_province: 'Ontario' },
    ]) {
      const response = await createViaApi(payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(422);
      expect(response.json()).toMatchObject({
        error_code: 'VALIDATION_ERROR',
        details: [
          { field: 'state_province', code: 'invalid_value', message: expect.stringMatching(/^Must be a/) },
        ],
      });
    }
    // codes, names and abbreviations the table reads; elsewhere the region is only an address
    for (const payload of [
      { name: 'Somewhere', country: 'CA', state_province: 'Ontario' },
      { name: 'Somewhere', country: 'CA', state_province: 'P.E.I.' },
      { name: 'Somewhere', country: 'US', state_province: 'tx' },
      { name: 'Somewhere', country: 'FR', state_province: 'ZZ' },
      // left out: allowed, as the spec has it (a subscription then needs it, below)
      { name: 'Somewhere', country: 'CA' },
    ]) {
      expect((await createViaApi(payload)).statusCode, JSON.stringify(payload)).toBe(201);
    }
  });

  it('the console, create and update: an update is checked against the country the customer keeps', async () => {
    const created = await run(
      'customer',
      'create',
      '--org',
      String(org.orgId),
      '--name',
      'Z',
      '--state-province',
      'ZZ',
    );
    // refused as flags are (exit 2), naming the flag
    expect(created.code).toBe(2);
    expect(created.stderr).toMatch(/--state-province: Must be a Canadian province or territory/);

    const customer = await createCustomer(
      api.platform.db,
      org.orgId,
      CreateCustomer.parse({ name: 'Mover', country: 'CA', state_province: 'ON' }),
    );
    const update = (...flags: string[]) => run('customer', 'update', '--id', String(customer.id), ...flags);
    // the region alone, against the kept country
    const region = await update('--state-province', 'ZZ');
    expect(region.code).toBe(2);
    expect(region.stderr).toMatch(/--state-province: Must be a Canadian province/);
    // the country alone, against the kept region: ON is no US state
    const country = await update('--country', 'US');
    expect(country.code).toBe(2);
    expect(country.stderr).toMatch(/--state-province: Must be a US state or DC/);
    // both together, checked together
    expect((await update('--country', 'US', '--state-province', 'New York')).code).toBe(0);
    // through the function any other path calls
    await expect(
      updateCustomer(
        api.platform.db,
        { customerId: customer.id, orgId: org.orgId },
        { state_province: 'Quebec' },
      ),
    ).rejects.toMatchObject({ status: 422, details: [expect.objectContaining({ field: 'state_province' })] });
    const { rows } = await api.platform.db.query(
      'SELECT country, state_province FROM customers WHERE id = $1',
      [customer.id],
    );
    expect(rows).toEqual([{ country: 'US', state_province: 'New York' }]);
  });

  it('subscription create needs a region the table knows, unless the customer is tax-exempt', async () => {
    const db = api.platform.db;
    const { seats } = await basicCatalog(db, org.orgId);
    const noProvince = await createCustomer(db, org.orgId, CreateCustomer.parse({ name: 'No province' }));
    await expect(
      subscribe(db, org.orgId, { customer_id: noProvince.id, items: [{ product_id: seats }] }),
    ).rejects.toMatchObject({
      status: 422,
      details: [
        {
          field: 'customer_id',
          code: 'invalid_value',
          message: expect.stringMatching(
            new RegExp(
              `^Customer ${noProvince.id} is in CA without a state_province, so its invoices cannot be taxed`,
            ),
          ),
        },
      ],
    });
    // a region stored before regions were checked at the door: named as it is stored
    const stored = await createCustomer(db, org.orgId, CreateCustomer.parse({ name: 'Stored before' }));
    await db.query(`UPDATE customers SET state_province = ' ZZ ' WHERE id = $1`, [stored.id]);
    await expect(
      subscribe(db, org.orgId, { customer_id: stored.id, items: [{ product_id: seats }] }),
    ).rejects.toMatchObject({
      status: 422,
      details: [
        expect.objectContaining({
          field: 'customer_id',
          message: expect.stringMatching(
            new RegExp(
              `^Customer ${stored.id} is in CA with state_province "ZZ", which the tax table does not know, so its invoices cannot be taxed`,
            ),
          ),
        }),
      ],
    });
    const exempt = await createCustomer(
      db,
      org.orgId,
      CreateCustomer.parse({ name: 'Exempt', tax_exempt: true }),
    );
    await expect(
      subscribe(db, org.orgId, { customer_id: exempt.id, items: [{ product_id: seats }] }),
    ).resolves.toMatchObject({ status: 'active' });
  });

  it('tax_lookup asks for the region instead of quoting GST alone', async () => {
    const result = await callTool(api, org.apiKey, 'tax_lookup', {
      country: 'CA',
      state_province: 'ZZ',
      amount: '100',
    });
    expect(result).toEqual({
      content: [{ type: 'text', text: expect.stringMatching(/state_province: Must be a Canadian province/) }],
      isError: true,
    });
  });
});

describe('a customer stored with an unknown region before the check', () => {
  it('is never taxed at a guess: its subscription is parked with the reason, then billed once corrected', async () => {
    const db = api.platform.db;
    const { seats } = await basicCatalog(db, org.orgId);
    const subscriptions: Record<string, number> = {};
    const customers: Record<string, number> = {};
    for (const [label, country, region] of [
      ['CA/ZZ', 'CA', 'ZZ'],
      ['CA/none', 'CA', null],
      ['US/ZZ', 'US', 'ZZ'],
    ] as const) {
      const customer = await createCustomer(
        db,
        org.orgId,
        CreateCustomer.parse({ name: label, country, state_province: country === 'CA' ? 'ON' : 'NY' }),
      );
      const subscription = await subscribe(db, org.orgId, {
        customer_id: customer.id,
        items: [{ product_id: seats, quantity: 10 }],
        start_date: new Date('2026-01-01T00:00:00Z'),
      });
      // as stored before regions were checked
      await db.query('UPDATE customers SET state_province = $2 WHERE id = $1', [customer.id, region]);
      subscriptions[label] = subscription.id;
      customers[label] = customer.id;
    }

    // the upcoming invoice says why it cannot be made, rather than showing GST alone (or no tax)
    const upcoming = await api.request({
      method: 'GET',
      path: `/subscriptions/${subscriptions['CA/ZZ']}/upcoming-invoice`,
      key: org.apiKey,
    });
    expect(upcoming.statusCode, upcoming.body).toBe(409);
    expect(upcoming.json().detail).toMatch(
      /state_province "ZZ" is no CA province or territory the tax table knows/,
    );

    const billed = await run('billing', 'run', '--now', '2026-02-02', '--org', String(org.orgId));
    expect(billed.code, billed.stderr).toBe(0);
    expect(billed.json().failures).toEqual([]);
    const parked = new Map(
      (billed.json().parked as { subscription_id: number; reason: string }[]).map((p) => [
        p.subscription_id,
        p.reason,
      ]),
    );
    expect(parked.get(subscriptions['CA/ZZ']!)).toBe(
      `the customer's state_province "ZZ" is no CA province or territory the tax table knows, so its tax cannot be determined (correct it with customer update)`,
    );
    expect(parked.get(subscriptions['CA/none']!)).toBe(
      'the customer is in CA without a state_province, so its tax cannot be determined (set its province or territory with customer update)',
    );
    expect(parked.get(subscriptions['US/ZZ']!)).toMatch(/"ZZ" is no US state the tax table knows/);
    for (const id of Object.values(subscriptions)) expect(await invoicesOf(db, id)).toEqual([]);

    // corrected and unparked: billed at the province's rate (ON 13 %: 100.00 + 13.00)
    expect(
      (await run('customer', 'update', '--id', String(customers['CA/ZZ']), '--state-province', 'Ontario'))
        .code,
    ).toBe(0);
    expect((await run('subscription', 'unpark', '--id', String(subscriptions['CA/ZZ']))).code).toBe(0);
    const rebilled = await run('billing', 'run', '--now', '2026-02-02', '--org', String(org.orgId));
    expect(rebilled.code, rebilled.stderr).toBe(0);
    expect((await invoicesOf(db, subscriptions['CA/ZZ']!)).map((invoice) => invoice.total)).toEqual([
      '113.00000000',
    ]);
  });

  it('still shows its usage priced before tax, in the API and the portal; only the upcoming invoice waits', async () => {
    const db = api.platform.db;
    const { apiCalls } = await basicCatalog(db, org.orgId);
    const customer = await createCustomer(
      db,
      org.orgId,
      CreateCustomer.parse({ name: 'Portal ZZ', country: 'CA', state_province: 'ON' }),
    );
    const today = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000);
    const subscription = await subscribe(
      db,
      org.orgId,
      { customer_id: customer.id, items: [{ product_id: apiCalls }], start_date: today },
      today,
    );
    await recordUsage(
      db,
      org.orgId,
      subscription.items[0]!.id,
      '150',
      new Date(today.getTime() + 1000).toISOString(),
    );
    await db.query(`UPDATE customers SET state_province = 'ZZ' WHERE id = $1`, [customer.id]);

    // 100 x 1.00 + 50 x 0.50 = 125.00 before tax, whatever the region
    const usage = await api.request({
      method: 'GET',
      path: `/subscriptions/${subscription.id}/usage`,
      key: org.apiKey,
    });
    expect(usage.statusCode, usage.body).toBe(200);
    expect(usage.json().data).toMatchObject({ total_amount: '125.00000000' });
    const upcoming = await api.request({
      method: 'GET',
      path: `/subscriptions/${subscription.id}/upcoming-invoice`,
      key: org.apiKey,
    });
    expect(upcoming.statusCode).toBe(409);

    const session = await createSession(api, org.apiKey, { customer_id: customer.id });
    const page = await open(api, session.url);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Amount so far, before tax: 125.00 CAD');
    expect(page.body).not.toContain('Upcoming invoice');
  });
});
