import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { type BillingScenario, insertBillingScenario } from '../helpers/billing-fixtures.js';
import { inProcessConsole } from '../helpers/console.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

/**
 * Dates derived from what a client gives (a period's end after a start, the day after a date)
 * must be ones the service can store and print, or the input is refused naming the field it came
 * from. The plausible bug: validating the given date only, and answering a year-10000 date
 * ("+010000-01-31T...", not ISO 8601 as the schema says) or a 500 later.
 */
let api: TestApi;
let org: TestOrg;
let scenario: BillingScenario;
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  scenario = await insertBillingScenario(api.platform.db, org.orgId);
});
afterAll(() => api?.close());

const console_ = () => inProcessConsole(() => ({ DATABASE_URL: api.database.url, LOG_LEVEL: 'silent' }));
const create = (start: string, ...more: string[]) =>
  console_()(
    'subscription',
    'create',
    '--org',
    String(org.orgId),
    '--customer',
    String(scenario.customers.ontario.id),
    '--items',
    JSON.stringify([
      { product_id: scenario.products.seats, quantity: 1 },
      { product_id: scenario.products.apiCalls },
    ]),
    '--start',
    start,
    ...more,
  );

describe('a subscription start', () => {
  it('is refused, naming --start, when its periods would end beyond the horizon', async () => {
    for (const start of ['9999-12-31', '2100-01-01T00:00:00Z']) {
      const refused = await create(start);
      expect(refused.code, start).toBe(2);
      expect(refused.stderr).toMatch(/--start: Must be before 2100-01-01T00:00:00Z\./);
    }
  });

  it('just before the horizon gives dates every route prints as ISO 8601, trial and term included', async () => {
    const created = await create(
      '2099-12-31T12:00:00Z',
      '--trial-days',
      '730',
      '--term-type',
      'termed',
      '--initial-term-months',
      '120',
    );
    expect(created.code, created.stderr).toBe(0);
    const id = created.json().id as number;
    const shown = await api.request({ path: `/subscriptions/${id}`, key: org.apiKey });
    expect(shown.statusCode, shown.body).toBe(200);
    const subscription = shown.json().data;
    for (const field of ['start_date', 'current_period_end', 'trial_end_date', 'subscription_end_date']) {
      expect(subscription[field], field).toMatch(ISO_INSTANT);
    }
    for (const path of [`/subscriptions/${id}/usage`, `/subscriptions/${id}/upcoming-invoice`]) {
      const response = await api.request({ path, key: org.apiKey });
      expect([200, 404], `${path}: ${response.body}`).toContain(response.statusCode);
    }
    const daily = await api.request({ path: `/subscriptions/${id}/usage/daily`, key: org.apiKey });
    expect(daily.statusCode, daily.body).toBe(200);
    for (const point of daily.json().data) expect(point.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });
});
