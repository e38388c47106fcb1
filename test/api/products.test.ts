import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Product } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { type BillingScenario, insertBillingScenario, insertProduct } from '../helpers/billing-fixtures.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommonRouteTests } from '../helpers/route-suite.js';

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;
let scenario: BillingScenario;
let productOfB: number;

beforeAll(async () => {
  api = await startTestApi();
  orgA = await createTestOrg(api.platform.db);
  orgB = await createTestOrg(api.platform.db);
  scenario = await insertBillingScenario(api.platform.db, orgA.orgId);
  productOfB = (await insertProduct(api.platform.db, orgB.orgId, { name: 'Foreign product' })).id;
});
afterAll(() => api?.close());

const PRODUCT_KEYS = [
  'id',
  'object',
  'name',
  'sku',
  'description',
  'unit_price',
  'currency',
  'unit_label',
  'category',
  'product_type',
  'pricing_type',
  'pricing_model',
  'pricing_scheme',
  'pricing_mode',
  'default_billing_period',
  'external_id',
  'is_active',
  'metadata',
  'created_at',
  'updated_at',
].sort();

const list = (query = '') => api.request({ path: `/products${query}`, key: orgA.apiKey });

describe('GET /products', () => {
  it("lists the organization's products with every field, enums lowercase, money with 8 digits", async () => {
    const response = await list('?limit=100');
    expect(response.statusCode).toBe(200);
    const { data, pagination } = response.json();
    expect(pagination).toEqual({ limit: 100, offset: 0, total: 6, has_more: false });
    expect(response.body).not.toContain('Foreign product');
    for (const product of data as Product[]) {
      expect(Object.keys(product).sort()).toEqual(PRODUCT_KEYS);
      expect(product.object).toBe('product');
      expect(product.unit_price).toMatch(/^\d+\.\d{8}$/);
      for (const field of [
        'category',
        'product_type',
        'pricing_type',
        'pricing_model',
        'pricing_scheme',
      ] as const) {
        expect(product[field]).toBe(product[field].toLowerCase());
      }
      // pricing_mode is null exactly unless the scheme is tiered
      expect(product.pricing_mode === null).toBe(product.pricing_scheme === 'linear');
    }
    const byName = Object.fromEntries((data as Product[]).map((p) => [p.name, p]));
    expect(byName['API calls']).toMatchObject({
      unit_price: '0.00125000',
      pricing_type: 'usage',
      pricing_scheme: 'tiered',
      pricing_mode: 'graduated',
      category: 'usage',
    });
    expect(byName.Storage).toMatchObject({ pricing_mode: 'volume' });
    expect(byName['Support bundle']).toMatchObject({
      product_type: 'bundle',
      pricing_mode: 'flat',
      default_billing_period: 'annually',
      metadata: { tier: 'gold', contacts: 3 },
    });
    expect(byName.Onboarding).toMatchObject({ pricing_type: 'one_time', pricing_model: 'flat_fee' });
    expect(byName['Legacy plan']).toMatchObject({ is_active: false, external_id: 'legacy-1' });
    // newest first (inserted in name order above, so the last inserted leads)
    expect(data[0].name).toBe('Legacy plan');
  });

  it('filters on active=true and active=false, composing with limit and offset', async () => {
    const active = (await list('?active=true')).json();
    expect(active.data.every((p: Product) => p.is_active)).toBe(true);
    expect(active.pagination.total).toBe(5);
    const inactive = (await list('?active=false')).json();
    expect(inactive.data.map((p: Product) => p.id)).toEqual([scenario.products.retired]);
    expect(inactive.pagination.total).toBe(1);
    const page = (await list('?active=true&limit=2&offset=2')).json();
    expect(page.data.map((p: Product) => p.id)).toEqual(active.data.slice(2, 4).map((p: Product) => p.id));
    expect(page.pagination).toEqual({ limit: 2, offset: 2, total: 5, has_more: true });
  });

  it('rejects an active value other than true or false with 422 naming it', async () => {
    for (const value of ['yes', '1', 'TRUE', '']) {
      const response = await list(`?active=${value}`);
      expect(response.statusCode, value).toBe(422);
      expect(response.json().details).toEqual([
        expect.objectContaining({ field: 'active', code: 'invalid_value' }),
      ]);
    }
  });

  describe('common route checks', () => {
    runCommonRouteTests(() => ({ api, key: orgA.apiKey, request: { method: 'GET', path: '/products' } }));
  });
});

describe('GET /products/{product_id}', () => {
  it('retrieves one product', async () => {
    const response = await api.request({ path: `/products/${scenario.products.seats}`, key: orgA.apiKey });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({
      id: scenario.products.seats,
      object: 'product',
      name: 'Seats',
      unit_price: '49.99000000',
      pricing_scheme: 'linear',
      pricing_mode: null,
    });
  });

  it("retrieves a product for its own organization's key, whichever organization that is", async () => {
    const response = await api.request({ path: `/products/${productOfB}`, key: orgB.apiKey });
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toMatchObject({ id: productOfB, name: 'Foreign product' });
  });

  it("lists a product for its own organization's key, whichever organization that is", async () => {
    const response = await api.request({ path: '/products', key: orgB.apiKey });
    expect(response.statusCode).toBe(200);
    expect(response.json().data.map((p: { id: number }) => p.id)).toEqual([productOfB]);
  });

  it('answers 404 for an id that is not a positive integer', async () => {
    const response = await api.request({ path: '/products/seats', key: orgA.apiKey });
    expect(response.statusCode).toBe(404);
    expect(response.json().error_code).toBe('NOT_FOUND');
  });

  it('is read-only: writes answer 405 with Allow', async () => {
    for (const method of ['POST', 'PATCH', 'DELETE'] as const) {
      const response = await api.request({
        method,
        path: `/products/${scenario.products.seats}`,
        key: orgA.apiKey,
      });
      expect(response.statusCode, method).toBe(405);
      expect(response.headers.allow).toBe('GET, HEAD');
      expect(response.json().error_code).toBe('METHOD_NOT_ALLOWED');
    }
    const create = await api.request({ method: 'POST', path: '/products', key: orgA.apiKey });
    expect(create.statusCode).toBe(405);
  });

  describe('common route checks', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: orgA.apiKey,
        request: { method: 'GET', path: `/products/${scenario.products.apiCalls}` },
        crossOrg: { path: (id) => `/products/${id}`, foreignId: productOfB, missingId: 987654321 },
      }),
      { namesRecord: true },
    );
  });
});
