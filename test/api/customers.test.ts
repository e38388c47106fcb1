import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CustomerReader } from '../../libs/customers/index.js';
import type { Customer } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { insertCustomer } from '../helpers/billing-fixtures.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommonRouteTests } from '../helpers/route-suite.js';

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;
let customerOfB: Customer;

beforeAll(async () => {
  api = await startTestApi();
  orgA = await createTestOrg(api.platform.db);
  orgB = await createTestOrg(api.platform.db);
  customerOfB = await insertCustomer(api.platform.db, orgB.orgId, { name: 'Other Org Customer' });
});
afterAll(() => api?.close());

function create(body: unknown, key = orgA.apiKey) {
  return api.request({
    method: 'POST',
    path: '/customers',
    key,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

function detailsOf(response: { statusCode: number; json(): unknown }) {
  expect(response.statusCode).toBe(422);
  const body = response.json() as { error_code: string; details: { field: string; code: string }[] };
  expect(body.error_code).toBe('VALIDATION_ERROR');
  return body.details.map((d) => [d.field, d.code]);
}

const CUSTOMER_KEYS = [
  'id',
  'object',
  'name',
  'contact_name',
  'email',
  'phone',
  'address_line1',
  'address_line2',
  'city',
  'state_province',
  'postal_code',
  'country',
  'tax_exempt',
  'tax_id',
  'credit_balance',
  'auto_pay_enabled',
  'created_at',
  'updated_at',
].sort();

describe('POST /customers', () => {
  it('creates a customer with every field, answering 201 with the public representation', async () => {
    const response = await create({
      name: 'Amélie Côté',
      email: 'amelie@example.com',
      contact_name: 'Amélie',
      phone: '+1 514 555 0100',
      address_line1: '1000 rue Sainte-Catherine O',
      address_line2: 'Bureau 200',
      city: 'Montréal',
      state_province: 'QC',
      postal_code: 'H3B 1A1',
      country: 'ca',
      tax_exempt: true,
      tax_id: 'QC-1234',
      notes: 'VIP: call before invoicing',
    });
    expect(response.statusCode).toBe(201);
    const { data } = response.json();
    expect(Object.keys(data).sort()).toEqual(CUSTOMER_KEYS);
    expect(data).toMatchObject({
      object: 'customer',
      name: 'Amélie Côté',
      city: 'Montréal',
      country: 'CA',
      tax_exempt: true,
      credit_balance: '0.00000000',
      auto_pay_enabled: false,
    });
    expect(data.id).toBeTypeOf('number');
    expect(data.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(response.body).not.toContain('notes');
    expect(response.body).not.toContain('VIP');

    const stored = await api.platform.db.query('SELECT notes FROM customers WHERE id = $1', [data.id]);
    expect(stored.rows[0]!.notes).toBe('VIP: call before invoicing');
    const read = await api.request({ path: `/customers/${data.id}`, key: orgA.apiKey });
    expect(read.json().data).toEqual(data);
    expect(read.body).not.toContain('VIP');
  });

  it("creates the customer in the key's organization, whichever organization that is", async () => {
    const response = await create({ name: 'Customer of B' }, orgB.apiKey);
    expect(response.statusCode).toBe(201);
    const id = response.json().data.id as number;
    const mine = await api.request({ path: `/customers/${id}`, key: orgB.apiKey });
    expect(mine.statusCode).toBe(200);
    expect(mine.json().data.name).toBe('Customer of B');
    expect((await api.request({ path: `/customers/${id}`, key: orgA.apiKey })).statusCode).toBe(404);
  });

  it('defaults country to CA and tax_exempt to false, optional fields to null', async () => {
    const response = await create({ name: 'Minimal Co' });
    expect(response.statusCode).toBe(201);
    expect(response.json().data).toMatchObject({
      name: 'Minimal Co',
      country: 'CA',
      tax_exempt: false,
      email: null,
      phone: null,
      contact_name: null,
      tax_id: null,
    });
  });

  it('requires a name of 1-255 characters', async () => {
    expect(detailsOf(await create({}))).toEqual([['name', 'required']]);
    expect(detailsOf(await create({ name: '' }))).toEqual([['name', 'blank']]);
    expect(detailsOf(await create({ name: 'x'.repeat(256) }))).toEqual([['name', 'too_long']]);
    expect(detailsOf(await create({ name: 42 }))).toEqual([['name', 'invalid_type']]);
    expect((await create({ name: 'x'.repeat(255) })).statusCode).toBe(201);
  });

  it('rejects an invalid e-mail address', async () => {
    for (const email of ['not-an-email', 'a@', '@b.com', 'a b@c.com']) {
      expect(detailsOf(await create({ name: 'Mail', email }))).toEqual([['email', 'invalid_format']]);
    }
  });

  it('takes any address the HTML5 e-mail rule allows, with at most 64 characters before the @', async () => {
    for (const email of [
      'a&b@example.com',
      'a=b@example.com',
      'user%x@example.com',
      "o'neil+tag@mail.example",
    ]) {
      const response = await create({ name: 'Mail', email });
      expect(response.statusCode, email).toBe(201);
      expect(response.json().data.email).toBe(email);
    }
    const local64 = `${'x'.repeat(64)}@example.com`;
    expect((await create({ name: 'Mail', email: local64 })).statusCode).toBe(201);
    for (const email of [`${'x'.repeat(65)}@example.com`, `${'x'.repeat(300)}@example.com`]) {
      expect(detailsOf(await create({ name: 'Mail', email }))).toEqual([['email', 'invalid_format']]);
    }
    // the total stays bounded too, each 63-character label being valid on its own
    const longDomain = `me@${Array.from({ length: 6 }, () => 'd'.repeat(63)).join('.')}.example`;
    expect(detailsOf(await create({ name: 'Mail', email: longDomain }))).toEqual([['email', 'too_long']]);
  });

  it.each([
    ['contact_name', 255],
    ['phone', 50],
    ['address_line1', 255],
    ['address_line2', 255],
    ['city', 100],
    ['state_province', 50],
    ['postal_code', 20],
    ['tax_id', 100],
  ])('limits %s to %i characters', async (field, max) => {
    // a region is checked against the tax table in Canada (the default) and the US: not elsewhere
    const where = field === 'state_province' ? { country: 'DE' } : {};
    expect(detailsOf(await create({ name: 'Long', ...where, [field]: 'x'.repeat(max + 1) }))).toEqual([
      [field, 'too_long'],
    ]);
    const ok = await create({ name: 'Long', ...where, [field]: 'x'.repeat(max) });
    expect(ok.statusCode).toBe(201);
    expect(ok.json().data[field]).toHaveLength(max);
  });

  it('requires a two-letter country code and a boolean tax_exempt', async () => {
    for (const country of ['ZZ', 'xx', 'UK', 'EU']) {
      expect(detailsOf(await create({ name: 'Where', country })), country).toEqual([
        ['country', 'invalid_value'],
      ]);
    }
    for (const country of ['gb', 'XK', 'AX']) {
      expect((await create({ name: 'Where', country })).statusCode, country).toBe(201);
    }
    for (const country of ['CAN', 'C', '12', '']) {
      expect(detailsOf(await create({ name: 'Where', country }))).toEqual([['country', 'invalid_format']]);
    }
    expect(detailsOf(await create({ name: 'Tax', tax_exempt: 'yes' }))).toEqual([
      ['tax_exempt', 'invalid_type'],
    ]);
  });

  it('names every failing field, unknown fields included', async () => {
    const details = detailsOf(
      await create({ name: '', email: 'nope', phone: 'x'.repeat(51), colour: 'red', credit_balance: '100' }),
    );
    expect(details).toEqual(
      expect.arrayContaining([
        ['name', 'blank'],
        ['email', 'invalid_format'],
        ['phone', 'too_long'],
        ['colour', 'unknown_field'],
        ['credit_balance', 'unknown_field'],
      ]),
    );
    expect(details).toHaveLength(5);
  });

  it('refuses text Postgres cannot store as sent with a 422, not a 500 or a silent U+FFFD', async () => {
    expect(detailsOf(await create({ name: 'Nul\u0000Byte', city: 'a\u0000b' }))).toEqual([
      ['name', 'invalid_value'],
      ['city', 'invalid_value'],
    ]);
    // a lone surrogate, sent as the JSON escape a client's buggy string slicing produces
    const lone = await api.request({
      method: 'POST',
      path: '/customers',
      key: orgA.apiKey,
      headers: { 'content-type': 'application/json' },
      payload: '{"name": "half \\ud800 a pair"}',
    });
    expect(lone.statusCode).toBe(422);
    expect(lone.json().details).toEqual([expect.objectContaining({ field: 'name', code: 'invalid_value' })]);
    // a whole pair is fine
    expect((await create({ name: 'Emoji 😀 Inc.' })).statusCode).toBe(201);
  });

  it('answers 400 for malformed JSON, 415 for another media type and 413 beyond the body limit', async () => {
    const malformed = await api.request({
      method: 'POST',
      path: '/customers',
      key: orgA.apiKey,
      headers: { 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error_code).toBe('BAD_REQUEST');

    const text = await api.request({
      method: 'POST',
      path: '/customers',
      key: orgA.apiKey,
      headers: { 'content-type': 'text/plain' },
      payload: 'name=x',
    });
    expect(text.statusCode).toBe(415);
    expect(text.json().error_code).toBe('UNSUPPORTED_MEDIA_TYPE');

    // notes has no length rule in the contract: long notes are kept, only the body limit bounds them
    const long = await create({ name: 'Long notes', notes: 'n'.repeat(50_000) });
    expect(long.statusCode).toBe(201);
    const stored = await api.platform.db.query('SELECT length(notes) AS n FROM customers WHERE id = $1', [
      long.json().data.id,
    ]);
    expect(stored.rows[0]!.n).toBe(50_000);

    const huge = await create({ name: 'Big', notes: 'x'.repeat(1024 * 1024) });
    expect(huge.statusCode).toBe(413);
    expect(huge.json().error_code).toBe('PAYLOAD_TOO_LARGE');

    const notAnObject = await create(['name']);
    expect(notAnObject.statusCode).toBe(422);
  });

  it('answers 415 for a compressed body, which it does not decompress, not 400 for invalid JSON', async () => {
    const gzipped = await api.request({
      method: 'POST',
      path: '/customers',
      key: orgA.apiKey,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(JSON.stringify({ name: 'Compressed' })),
    });
    expect(gzipped.statusCode).toBe(415);
    expect(gzipped.json()).toMatchObject({ error_code: 'UNSUPPORTED_MEDIA_TYPE' });
    expect(gzipped.json().detail).toContain('Content-Encoding gzip');

    const identity = await api.request({
      method: 'POST',
      path: '/customers',
      key: orgA.apiKey,
      headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
      payload: JSON.stringify({ name: 'Plain' }),
    });
    expect(identity.statusCode).toBe(201);
  });

  it('answers 400 for a body that is not UTF-8 instead of storing U+FFFD in its place', async () => {
    const payload = Buffer.concat([Buffer.from('{"name":"Caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
    const latin1 = await api.request({
      method: 'POST',
      path: '/customers',
      key: orgA.apiKey,
      headers: { 'content-type': 'application/json' },
      payload,
    });
    expect(latin1.statusCode).toBe(400);
    expect(latin1.json()).toMatchObject({
      error_code: 'BAD_REQUEST',
      detail: 'The request body is not valid UTF-8.',
    });

    const utf8 = await create({ name: 'Caf\u00e9' });
    expect(utf8.statusCode).toBe(201);
    expect(utf8.json().data.name).toBe('Caf\u00e9');
  });

  describe('common route checks', () => {
    runCommonRouteTests(() => ({
      api,
      key: orgA.apiKey,
      request: { method: 'POST', path: '/customers', body: { name: 'Suite Customer' } },
      expectedStatus: 201,
    }));
  });
});

describe('GET /customers/{customer_id}', () => {
  it('answers 404 NOT_FOUND for an id that is not a positive integer (no record can have it)', async () => {
    for (const id of ['abc', '0', '-1', '1.5', '1e3', '99999999999999999999']) {
      const response = await api.request({ path: `/customers/${id}`, key: orgA.apiKey });
      expect(response.statusCode, id).toBe(404);
      expect(response.json().error_code).toBe('NOT_FOUND');
    }
  });

  it('reads concurrent requests in one query, each answered for its own organization', async () => {
    const own = await insertCustomer(api.platform.db, orgA.orgId, { name: 'Batched Customer' });
    let queries = 0;
    const reader = new CustomerReader({
      query: (text, values) => {
        queries++;
        return api.platform.db.query(text, values);
      },
    });
    const outcomes = await Promise.allSettled([
      reader.get(orgA.orgId, own.id),
      reader.get(orgA.orgId, customerOfB.id), // another org's customer: not found, as over HTTP
      reader.get(orgB.orgId, customerOfB.id),
      reader.get(orgA.orgId, 987654321),
      reader.get(orgA.orgId, String(own.id)),
      reader.get(orgA.orgId, 'abc'),
    ]);
    expect(queries).toBe(1);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.name : (o.reason as Error).name))).toEqual(
      ['Batched Customer', 'ApiError', 'Other Org Customer', 'ApiError', 'Batched Customer', 'ApiError'],
    );
    const response = await api.request({ path: `/customers/${own.id}`, key: orgA.apiKey });
    expect(response.json().data).toEqual(
      outcomes[0]!.status === 'fulfilled' ? outcomes[0]!.value : undefined,
    );
  });

  describe('common route checks', () => {
    let own: Customer;
    beforeAll(async () => {
      own = await insertCustomer(api.platform.db, orgA.orgId, { name: 'Own Customer' });
    });
    runCommonRouteTests(
      () => ({
        api,
        key: orgA.apiKey,
        request: { method: 'GET', path: `/customers/${own.id}` },
        crossOrg: { path: (id) => `/customers/${id}`, foreignId: customerOfB.id, missingId: 987654321 },
      }),
      { namesRecord: true },
    );
  });
});

describe('GET /customers', () => {
  let api2: TestApi;
  let org: TestOrg;
  const ids: number[] = [];

  beforeAll(async () => {
    api2 = await startTestApi();
    org = await createTestOrg(api2.platform.db);
    const other = await createTestOrg(api2.platform.db);
    await insertCustomer(api2.platform.db, other.orgId, { name: 'Not yours' });
    // 30 customers: pairs share a created_at so the id DESC tie-break shows
    const base = Date.parse('2026-01-01T00:00:00Z');
    for (let i = 0; i < 30; i++) {
      const customer = await insertCustomer(
        api2.platform.db,
        org.orgId,
        { name: `Customer ${i}` },
        new Date(base + Math.floor(i / 2) * 60_000),
      );
      ids.push(customer.id);
    }
  });
  afterAll(() => api2?.close());

  const list = (query: string) => api2.request({ path: `/customers${query}`, key: org.apiKey });
  // newest first; within one created_at, the higher id first
  const expectedOrder = () =>
    ids
      .map((id, i) => ({ id, minute: Math.floor(i / 2) }))
      .sort((a, b) => b.minute - a.minute || b.id - a.id)
      .map((c) => c.id);

  it('lists only the organization customers, newest first, 25 by default', async () => {
    const response = await list('');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.pagination).toEqual({ limit: 25, offset: 0, total: 30, has_more: true });
    expect(body.data.map((c: Customer) => c.id)).toEqual(expectedOrder().slice(0, 25));
    expect(body.data.every((c: Customer) => c.object === 'customer')).toBe(true);
    expect(response.body).not.toContain('Not yours');
  });

  it('pages with limit and offset; has_more exactly when offset + limit < total', async () => {
    const cases: [string, number[], boolean][] = [
      ['?limit=10&offset=0', expectedOrder().slice(0, 10), true],
      ['?limit=10&offset=20', expectedOrder().slice(20, 30), false],
      ['?limit=10&offset=19', expectedOrder().slice(19, 29), true],
      ['?limit=100', expectedOrder(), false],
      ['?limit=5&offset=30', [], false],
      ['?offset=1000', [], false],
    ];
    for (const [query, expected, hasMore] of cases) {
      const body = (await list(query)).json();
      expect(
        body.data.map((c: Customer) => c.id),
        query,
      ).toEqual(expected);
      expect(body.pagination.total, query).toBe(30);
      expect(body.pagination.has_more, query).toBe(hasMore);
    }
  });

  it('rejects out-of-range or malformed limit and offset with 422 naming the parameter', async () => {
    for (const [query, field] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=abc', 'limit'],
      ['?offset=-1', 'offset'],
      ['?offset=1.5', 'offset'],
      // digits only: no exponent, hex, sign, blank or padding that Number() would read
      ['?limit=1e1', 'limit'],
      ['?limit=0x10', 'limit'],
      ['?limit=%200x10', 'limit'],
      ['?limit=+5', 'limit'],
      ['?limit=%205', 'limit'],
      ['?limit=5%20', 'limit'],
      ['?limit=', 'limit'],
      ['?offset=', 'offset'],
      ['?offset=1e3', 'offset'],
      ['?offset=Infinity', 'offset'],
      ['?offset=9007199254740992', 'offset'],
      ['?offset=9007199254740993', 'offset'],
      [`?offset=${'9'.repeat(400)}`, 'offset'],
    ] as const) {
      const response = await list(query);
      expect(response.statusCode, query).toBe(422);
      expect(response.json().error_code, query).toBe('VALIDATION_ERROR');
      expect(
        response.json().details.map((d: { field: string }) => d.field),
        query,
      ).toEqual([field]);
    }
  });

  it('reads limit and offset written in digits, and defaults them when absent', async () => {
    for (const [query, limit, offset] of [
      ['', 25, 0],
      ['?limit=10', 10, 0],
      ['?limit=010&offset=007', 10, 7],
      ['?offset=9007199254740991', 25, 9007199254740991],
    ] as const) {
      const response = await list(query);
      expect(response.statusCode, query).toBe(200);
      expect(response.json().pagination, query).toMatchObject({ limit, offset });
    }
  });

  it('counts the total when the page is full and derives it on the last page', async () => {
    const empty = await createTestOrg(api2.platform.db);
    const none = await api2.request({ path: '/customers', key: empty.apiKey });
    expect(none.json()).toEqual({
      data: [],
      pagination: { limit: 25, offset: 0, total: 0, has_more: false },
    });
  });

  describe('common route checks', () => {
    runCommonRouteTests(() => ({
      api: api2,
      key: org.apiKey,
      request: { method: 'GET', path: '/customers' },
    }));
  });
});
