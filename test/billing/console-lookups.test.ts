import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INVOICE_STATUSES } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { type BillingScenario, insertBillingScenario } from '../helpers/billing-fixtures.js';
import { inProcessConsole } from '../helpers/console.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommand } from '../helpers/processes.js';

/**
 * The operators' lookups (issue 27 item 6): every list prints what the public API's list route
 * answers for the same page, every show what its get route answers, each within one organization;
 * updates change only the fields given; `npx billing` runs them as a real process.
 */

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;
let a: BillingScenario;
let b: BillingScenario;
let env: Record<string, string>;

beforeAll(async () => {
  api = await startTestApi();
  orgA = await createTestOrg(api.platform.db, { name: 'Lookups A' });
  orgB = await createTestOrg(api.platform.db, { name: 'Lookups B' });
  a = await insertBillingScenario(api.platform.db, orgA.orgId);
  b = await insertBillingScenario(api.platform.db, orgB.orgId);
  for (const [url, status] of [
    ['https://hooks.example.com/a1', 'ACTIVE'],
    ['https://hooks.example.com/a2', 'DISABLED'],
  ] as const) {
    const created = await api.request({
      method: 'POST',
      path: '/webhook-endpoints',
      key: orgA.apiKey,
      payload: { url, events: ['invoice.*'], status },
    });
    expect(created.statusCode, created.body).toBe(201);
  }
  env = {
    DATABASE_URL: api.database.url,
    LOG_LEVEL: 'silent',
    PORT: '8080',
    HOST: '127.0.0.1',
    CLICKHOUSE_URL: '',
  };
});
afterAll(() => api?.close());

const run = inProcessConsole(() => env);

/** Runs a command that must succeed and returns its JSON. */
async function ok(...argv: string[]) {
  const result = await run(...argv);
  expect(result.stderr, argv.join(' ')).toBe('');
  expect(result.code, argv.join(' ')).toBe(0);
  return result.json();
}

/** The api as the console's links name it (its local default: http://127.0.0.1:8080). */
async function apiGet(path: string, key = orgA.apiKey) {
  const response = await api.request({ method: 'GET', path, key, headers: { host: '127.0.0.1:8080' } });
  expect(response.statusCode, `${path}: ${response.body}`).toBe(200);
  return response.json();
}

const A = () => String(orgA.orgId);
const B = () => String(orgB.orgId);

describe('console lists and shows', () => {
  it('prints each page exactly as the public list route answers it', async () => {
    const quebec = String(a.customers.quebec.id);
    const ontario = String(a.customers.ontario.id);
    const cases: [string[], string, number][] = [
      [['customer', 'list', '--org', A()], '/customers', 3],
      [['customer', 'list', '--org', A(), '--limit', '2', '--offset', '1'], '/customers?limit=2&offset=1', 2],
      [['product', 'list', '--org', A()], '/products', 6],
      [['product', 'list', '--org', A(), '--active', 'false'], '/products?active=false', 1],
      [['product', 'list', '--org', A(), '--active'], '/products?active=true', 5],
      [['subscription', 'list', '--org', A()], '/subscriptions', 4],
      [['subscription', 'list', '--org', A(), '--status', 'trialing'], '/subscriptions?status=trialing', 1],
      [
        ['subscription', 'list', '--org', A(), '--customer', ontario],
        `/subscriptions?customer_id=${ontario}`,
        2,
      ],
      [
        ['subscription', 'list', '--org', A(), '--customer', ontario, '--status', 'past_due'],
        `/subscriptions?customer_id=${ontario}&status=past_due`,
        1,
      ],
      [['invoice', 'list', '--org', A(), '--limit', '3'], '/invoices?limit=3', 3],
      [['invoice', 'list', '--org', A(), '--status', 'PAID'], '/invoices?status=PAID', 1],
      [
        ['invoice', 'list', '--org', A(), '--customer', quebec, '--offset', '2'],
        `/invoices?customer_id=${quebec}&offset=2`,
        INVOICE_STATUSES.length - 2,
      ],
      [['invoice', 'list', '--org', A(), '--customer', ontario], `/invoices?customer_id=${ontario}`, 0],
      [['webhook-endpoint', 'list', '--org', A()], '/webhook-endpoints', 2],
      [
        ['webhook-endpoint', 'list', '--org', A(), '--status', 'DISABLED'],
        '/webhook-endpoints?status=DISABLED',
        1,
      ],
    ];
    for (const [argv, path, rows] of cases) {
      const printed = await ok(...argv);
      expect(printed, argv.join(' ')).toEqual(await apiGet(path));
      expect(printed.data, argv.join(' ')).toHaveLength(rows);
    }
  });

  it('shows one record as the get route answers it, found by id alone or within --org', async () => {
    const invoice = a.invoices.PAID.id;
    const cases: [string[], string][] = [
      [['customer', 'show', '--id', String(a.customers.newYork.id)], `/customers/${a.customers.newYork.id}`],
      [
        ['subscription', 'show', '--id', String(a.subscriptions.active)],
        `/subscriptions/${a.subscriptions.active}`,
      ],
      [['invoice', 'show', '--id', invoice], `/invoices/${invoice}`],
    ];
    for (const [argv, path] of cases) {
      const { data } = await apiGet(path);
      expect(await ok(...argv), argv.join(' ')).toEqual(data);
      expect(await ok(...argv, '--org', A()), argv.join(' ')).toEqual(data);
    }
    const ofB = await ok('customer', 'show', '--id', String(b.customers.quebec.id));
    expect(ofB).toEqual((await apiGet(`/customers/${b.customers.quebec.id}`, orgB.apiKey)).data);
  });

  it("finds nothing of another organization's: show exits 1, lists leave it out", async () => {
    const shows: [string[], RegExp][] = [
      [['customer', 'show', '--id', String(a.customers.quebec.id)], /Customer \d+ not found/],
      [['subscription', 'show', '--id', String(a.subscriptions.active)], /Subscription \d+ not found/],
      [['invoice', 'show', '--id', a.invoices.POSTED.id], /Invoice [0-9a-f-]+ not found/],
    ];
    for (const [argv, message] of shows) {
      const result = await run(...argv, '--org', B());
      expect(result.code, argv.join(' ')).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^error \(NOT_FOUND\): /);
      expect(result.stderr).toMatch(message);
    }
    const missing = await run('customer', 'show', '--id', '999999999');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/NOT_FOUND.*Customer 999999999 not found/);

    const idsOf = async (...argv: string[]) =>
      ((await ok(...argv, '--limit', '100')).data as { id: unknown }[]).map((row) => row.id);
    const ofA: Record<string, unknown[]> = {
      customer: Object.values(a.customers).map((customer) => customer.id),
      subscription: Object.values(a.subscriptions),
      invoice: Object.values(a.invoices).map((invoice) => invoice.id),
      product: Object.values(a.products),
    };
    for (const [list, idsOfA] of Object.entries(ofA)) {
      expect(await idsOf(list, 'list', '--org', A())).toEqual(expect.arrayContaining(idsOfA));
      const idsOfB = await idsOf(list, 'list', '--org', B());
      expect(idsOfB.length, list).toBeGreaterThan(0);
      for (const id of idsOfB) expect(idsOfA, list).not.toContain(id);
    }
    expect(await idsOf('webhook-endpoint', 'list', '--org', B())).toEqual([]);
    // A's customer as a filter within B: nothing
    const filtered = await ok('invoice', 'list', '--org', B(), '--customer', String(a.customers.quebec.id));
    expect(filtered).toEqual({ data: [], pagination: { limit: 25, offset: 0, total: 0, has_more: false } });

    for (const list of ['customer', 'product', 'subscription', 'invoice', 'webhook-endpoint', 'key']) {
      const unknown = await run(list, 'list', '--org', '999999999');
      expect(unknown.code, list).toBe(1);
      expect(unknown.stderr).toMatch(/NOT_FOUND.*Organization 999999999 not found/);
    }
  });

  it('pages newest first: pages of two cover the list once, has_more until the last', async () => {
    const total = INVOICE_STATUSES.length;
    const all = await ok('invoice', 'list', '--org', A(), '--limit', '100');
    expect(all.pagination).toEqual({ limit: 100, offset: 0, total, has_more: false });
    const order = (all.data as { created_at: string; id: string }[]).map((row) => row.created_at);
    expect([...order].sort().reverse()).toEqual(order);

    const walked: string[] = [];
    for (let offset = 0; offset < total; offset += 2) {
      const page = await ok('invoice', 'list', '--org', A(), '--limit', '2', '--offset', String(offset));
      expect(page.pagination).toEqual({ limit: 2, offset, total, has_more: offset + 2 < total });
      walked.push(...page.data.map((row: { id: string }) => row.id));
    }
    expect(walked).toEqual(all.data.map((row: { id: string }) => row.id));
    const beyond = await ok('customer', 'list', '--org', A(), '--offset', '10');
    expect(beyond).toEqual({ data: [], pagination: { limit: 25, offset: 10, total: 3, has_more: false } });
  });

  it('refuses bad flags with usage (exit 2), reading no record', async () => {
    const cases: [string[], string][] = [
      [['customer', 'list'], '--org: Required'],
      [['webhook-endpoint', 'list'], '--org: Required'],
      [['customer', 'list', '--org', A(), '--limit', '0'], '--limit: '],
      [['customer', 'list', '--org', A(), '--limit', '101'], '--limit: '],
      [['product', 'list', '--org', A(), '--limit', '1e1'], '--limit: '],
      [['product', 'list', '--org', A(), '--offset', '-1'], '--offset: '],
      [['product', 'list', '--org', A(), '--active', 'maybe'], '--active: Must be true or false.'],
      [['subscription', 'list', '--org', A(), '--status', 'ACTIVE'], '--status: '],
      [['subscription', 'list', '--org', A(), '--customer', 'acme'], '--customer: '],
      [['invoice', 'list', '--org', A(), '--status', 'paid'], '--status: '],
      [['invoice', 'show', '--id', '42'], '--id: '],
      [['invoice', 'show'], '--id: Required'],
      [['customer', 'show', '--id', 'x'], '--id: '],
      [['subscription', 'show', '--id', '1', '--org', 'A'], '--org: '],
      [['org', 'list', '--org', A()], '--org: Unknown field.'],
      [['key', 'list', '--org', A(), '--show-hash'], '--show-hash: Unknown field.'],
    ];
    for (const [argv, message] of cases) {
      const result = await run(...argv);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr, argv.join(' ')).toContain(message);
      expect(result.stderr).toMatch(new RegExp(`\\nusage: ${argv[0]} ${argv[1]} `));
    }
  });
});

describe('org list and key list', () => {
  it('lists organizations newest first, paged', async () => {
    // this file's database holds its own organizations only
    const orgC = await ok('org', 'create', '--name', 'Lookups C', '--plan', 'growth');
    const first = await ok('org', 'list', '--limit', '2');
    expect(first.pagination).toEqual({ limit: 2, offset: 0, total: 3, has_more: true });
    expect(first.data).toEqual([
      orgC,
      await ok('org', 'list', '--offset', '1', '--limit', '1').then((page) => page.data[0]),
    ]);
    expect(first.data[1]).toMatchObject({ id: orgB.orgId, name: 'Lookups B', plan: 'scale' });
    const rest = await ok('org', 'list', '--limit', '2', '--offset', '2');
    expect(rest.pagination).toEqual({ limit: 2, offset: 2, total: 3, has_more: false });
    expect(rest.data).toHaveLength(1);
    expect(rest.data[0]).toMatchObject({
      id: orgA.orgId,
      name: 'Lookups A',
      requests_per_hour: expect.any(Number),
    });
  });

  it("lists an organization's keys, revoked ones included, never a key nor its hash", async () => {
    const second = await ok('key', 'create', '--org', A(), '--name', 'ci', '--environment', 'test');
    await ok('key', 'revoke', '--key-id', String(second.id));
    const result = await run('key', 'list', '--org', A());
    expect(result.code).toBe(0);
    const { data, pagination } = result.json();
    expect(pagination).toEqual({ limit: 25, offset: 0, total: 2, has_more: false });
    expect(data.map((key: { id: number }) => key.id)).toEqual([second.id, orgA.keyId]);
    for (const key of data) {
      expect(Object.keys(key).sort()).toEqual(
        ['created_at', 'environment', 'id', 'name', 'org_id', 'prefix', 'revoked_at'].sort(),
      );
    }
    expect(data[0]).toMatchObject({ name: 'ci', environment: 'test', revoked_at: expect.any(String) });
    expect(data[1]).toMatchObject({ name: 'test', environment: 'live', revoked_at: null });
    expect(orgA.apiKey.startsWith(data[1].prefix)).toBe(true);
    const { rows } = await api.platform.db.query<{ key_hash: string }>(
      'SELECT key_hash FROM api_keys WHERE org_id = $1',
      [orgA.orgId],
    );
    for (const { key_hash } of rows) expect(result.stdout).not.toContain(key_hash.trim());
    expect(result.stdout).not.toContain(orgA.apiKey);
    expect(result.stdout).not.toContain(second.api_key);

    const ofB = await ok('key', 'list', '--org', B(), '--limit', '1');
    expect(ofB.data.map((key: { id: number }) => key.id)).toEqual([orgB.keyId]);
  });
});

describe('customer update', () => {
  it('changes only the flags given: defaults of create never come back', async () => {
    const id = String(b.customers.ontario.id);
    const before = await ok('customer', 'show', '--id', id);
    const exempt = await ok(
      'customer',
      'update',
      '--id',
      id,
      '--tax-exempt',
      '--country',
      'US',
      '--state-province',
      'NY',
    );
    expect(exempt).toMatchObject({ tax_exempt: true, country: 'US', state_province: 'NY' });
    const renamed = await ok(
      'customer',
      'update',
      '--id',
      id,
      '--org',
      B(),
      '--name',
      'Maple Data',
      '--email',
      'ap@maple.example',
    );
    // country, tax_exempt: not given, so not reset to CA and false
    expect(renamed).toEqual({
      ...before,
      name: 'Maple Data',
      email: 'ap@maple.example',
      tax_exempt: true,
      country: 'US',
      state_province: 'NY',
      updated_at: renamed.updated_at,
    });
    expect(renamed.updated_at > before.updated_at).toBe(true);
    expect(await ok('customer', 'show', '--id', id)).toEqual(renamed);

    // an empty value empties what may be empty
    const cleared = await ok(
      'customer',
      'update',
      '--id',
      id,
      '--email',
      '',
      '--tax-id',
      '',
      '--tax-exempt',
      'false',
    );
    expect(cleared).toMatchObject({ email: null, tax_id: null, tax_exempt: false, name: 'Maple Data' });
    const { rows } = await api.platform.db.query('SELECT notes FROM customers WHERE id = $1', [id]);
    expect(rows[0]!.notes).toBeNull();
    await ok('customer', 'update', '--id', id, '--notes', 'Pays by cheque');
    const noted = await api.platform.db.query('SELECT notes FROM customers WHERE id = $1', [id]);
    expect(noted.rows[0]!.notes).toBe('Pays by cheque');
  });

  it('refuses what create refuses (exit 2) and changes nothing', async () => {
    const id = String(b.customers.quebec.id);
    const before = await ok('customer', 'show', '--id', id);
    const cases: [string[], string][] = [
      [['--email', 'not-an-address'], '--email: '],
      [['--name', ''], '--name: '],
      [['--country', ''], '--country: '],
      [['--country', 'Canada'], '--country: '],
      [['--phone', 'x'.repeat(51)], '--phone: '],
      [['--tax-exempt', 'maybe'], '--tax-exempt: Must be true or false.'],
      [['--credit-balance', '100'], '--credit-balance: Unknown field.'],
      [['--name', 'A', '--email', 'bad'], '--email: '],
    ];
    for (const [flags, message] of cases) {
      const result = await run('customer', 'update', '--id', id, ...flags);
      expect(result.code, flags.join(' ')).toBe(2);
      expect(result.stderr, flags.join(' ')).toContain(message);
      expect(result.stderr).toMatch(/\nusage: customer update --id ID/);
    }
    expect(await ok('customer', 'show', '--id', id)).toEqual(before);
  });

  it("finds no customer of another organization's (exit 1) and leaves it as it was", async () => {
    const id = String(b.customers.newYork.id);
    const before = await ok('customer', 'show', '--id', id);
    const result = await run('customer', 'update', '--id', id, '--org', A(), '--name', 'Taken over');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/NOT_FOUND.*Customer \d+ not found/);
    expect(await ok('customer', 'show', '--id', id)).toEqual(before);
  });
});

describe('product update', () => {
  const priceOf = async (productId: number) => {
    const { rows } = await api.platform.db.query(
      `SELECT p.unit_price, p.pricing_type, p.pricing_model, p.pricing_scheme, p.pricing_mode, p.currency,
              (SELECT json_agg(t ORDER BY t.position) FROM product_price_tiers t WHERE t.product_id = p.id) AS tiers
         FROM products p WHERE p.id = $1`,
      [productId],
    );
    return rows[0]!;
  };

  it('renames and describes a product; its price and tiers stay as they were', async () => {
    const id = b.products.apiCalls;
    const price = await priceOf(id);
    expect(price.tiers).toHaveLength(2);
    const updated = await ok(
      'product',
      'update',
      '--id',
      String(id),
      '--org',
      B(),
      '--name',
      'API requests',
      '--description',
      'Each authenticated request',
      '--sku',
      'API-REQ',
      '--unit-label',
      'request',
      '--external-id',
      'prod_123',
    );
    expect(updated).toMatchObject({
      object: 'product',
      id,
      name: 'API requests',
      description: 'Each authenticated request',
      sku: 'API-REQ',
      unit_label: 'request',
      external_id: 'prod_123',
      is_active: true,
      pricing_mode: 'graduated',
    });
    expect(updated.tiers).toHaveLength(2);
    expect(await priceOf(id)).toEqual(price);
    const listed = await ok('product', 'list', '--org', B(), '--limit', '100');
    const { tiers: _tiers, ...publicProduct } = updated;
    expect(listed.data.find((product: { id: number }) => product.id === id)).toEqual(publicProduct);
  });

  it('--active false keeps a product off new subscriptions; --active true brings it back', async () => {
    const id = b.products.storage;
    const items = JSON.stringify([{ product_id: id, quantity: 1 }]);
    const subscribe = () =>
      run(
        'subscription',
        'create',
        '--org',
        B(),
        '--customer',
        String(b.customers.quebec.id),
        '--items',
        items,
      );

    const off = await ok('product', 'update', '--id', String(id), '--active', 'false');
    expect(off.is_active).toBe(false);
    const inactive = await ok('product', 'list', '--org', B(), '--active', 'false');
    expect(inactive.data.map((product: { id: number }) => product.id)).toContain(id);
    const refused = await subscribe();
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--items\.0\.product_id: Product \d+ is not active/);

    const on = await ok('product', 'update', '--id', String(id), '--active', 'true');
    expect(on.is_active).toBe(true);
    const subscribed = await subscribe();
    expect(subscribed.code, subscribed.stderr).toBe(0);
  });

  it('refuses a price, bad values and another organization, changing nothing', async () => {
    const id = String(b.products.seats);
    const before = await ok('product', 'list', '--org', B(), '--limit', '100');
    const cases: [string[], string, number][] = [
      [['--unit-price', '5'], '--unit-price: Unknown field.', 2],
      [['--tiers', '[]'], '--tiers: Unknown field.', 2],
      [['--name', ''], '--name: ', 2],
      [['--unit-label', ''], '--unit-label: ', 2],
      [['--sku', 'x'.repeat(101)], '--sku: ', 2],
      [['--active', 'no'], '--active: Must be true or false.', 2],
      [['--org', A(), '--name', 'Taken over'], 'NOT_FOUND', 1],
    ];
    for (const [flags, message, code] of cases) {
      const result = await run('product', 'update', '--id', id, ...flags);
      expect(result.code, flags.join(' ')).toBe(code);
      expect(result.stderr, flags.join(' ')).toContain(message);
    }
    expect(await ok('product', 'list', '--org', B(), '--limit', '100')).toEqual(before);
  });
});

/** `npx billing ...` from the project's directory, as an operator types it. */
const npxBilling = (args: string[]) => runCommand('npx', ['--no-install', 'billing', ...args], env);

describe('npx billing', () => {
  it('runs the console as its own process: help, a list, a refusal', async () => {
    const [help, list, missing, bad] = await Promise.all([
      npxBilling(['--help']),
      npxBilling(['customer', 'list', '--org', A(), '--limit', '2']),
      npxBilling(['invoice', 'show', '--id', a.invoices.PAID.id, '--org', B()]),
      npxBilling(['customer', 'list', '--org', A(), '--limit', '0']),
    ]);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(
      /^usage: npx billing <command>[\s\S]*customer list[\s\S]*webhook-endpoint list/,
    );
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual(await apiGet('/customers?limit=2'));
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/^error \(NOT_FOUND\): Invoice [0-9a-f-]+ not found/);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^invalid flags for 'customer list':\n {2}--limit: /);
  }, 90_000);
});
