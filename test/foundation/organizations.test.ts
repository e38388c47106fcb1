import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../libs/errors/index.js';
import {
  createOrganization,
  getOrganization,
  setOrganizationSettings,
  setPlan,
  setRateLimitOverride,
} from '../../libs/organizations/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** The operator's rules for tenants (libs/organizations), against the real database. */
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase('organizations');
});
afterAll(() => database?.drop());

/** The [field, code] of each `details` entry of a refusal, or the error when it is no validation error. */
async function refusal(attempt: Promise<unknown>): Promise<[string, string][] | unknown> {
  try {
    await attempt;
  } catch (error) {
    if (error instanceof ApiError && error.code === 'VALIDATION_ERROR') {
      return error.details!.map((detail) => [detail.field, detail.code]);
    }
    return error;
  }
  throw new Error('expected a refusal');
}

describe('creating an organization', () => {
  it('defaults to the beta plan, CAD, 30-day terms and Canada', async () => {
    const org = await createOrganization(database.db, { name: 'Defaults Inc' });
    expect(org).toMatchObject({
      name: 'Defaults Inc',
      plan: 'beta',
      default_currency: 'CAD',
      payment_terms_days: 30,
      rate_limit_override: null,
      requests_per_hour: 2000,
    });
    const { rows } = await database.db.query('SELECT country FROM organizations WHERE id = $1', [org.id]);
    expect(rows).toEqual([{ country: 'CA' }]);
  });

  it('keeps the payment terms and country given, 0-day terms included', async () => {
    const org = await createOrganization(database.db, {
      name: 'Cash Upfront LLC',
      paymentTermsDays: 0,
      country: 'US',
    });
    expect(org.payment_terms_days).toBe(0);
    const { rows } = await database.db.query('SELECT country FROM organizations WHERE id = $1', [org.id]);
    expect(rows).toEqual([{ country: 'US' }]);
  });

  it('takes a name of 1 to 255 characters', async () => {
    expect((await createOrganization(database.db, { name: 'n'.repeat(255) })).name).toHaveLength(255);
    expect(await refusal(createOrganization(database.db, { name: 'n'.repeat(256) }))).toEqual([
      ['name', 'invalid_value'],
    ]);
    expect(await refusal(createOrganization(database.db, { name: '' }))).toEqual([['name', 'invalid_value']]);
  });

  it('takes a known plan and a currency with a known minor unit only', async () => {
    expect(await refusal(createOrganization(database.db, { name: 'P', plan: 'platinum' }))).toEqual([
      ['plan', 'invalid_value'],
    ]);
    expect(await refusal(createOrganization(database.db, { name: 'C', currency: 'XXX' }))).toEqual([
      ['currency', 'invalid_value'],
    ]);
    const yen = await createOrganization(database.db, { name: 'Yen KK', plan: 'growth', currency: 'JPY' });
    expect(yen).toMatchObject({ plan: 'growth', default_currency: 'JPY', requests_per_hour: 50_000 });
  });
});

describe('changing an organization', () => {
  it('overrides the rate limit with a positive whole number, and null gives the plan its limit back', async () => {
    const org = await createOrganization(database.db, { name: 'Limits Ltd', plan: 'starter' });
    for (const bad of [0, -1, 1.5]) {
      expect(await refusal(setRateLimitOverride(database.db, org.id, bad)), String(bad)).toEqual([
        ['requests_per_hour', 'invalid_value'],
      ]);
    }
    expect(await setRateLimitOverride(database.db, org.id, 1)).toMatchObject({
      rate_limit_override: 1,
      requests_per_hour: 1,
    });
    expect(await setRateLimitOverride(database.db, org.id, null)).toMatchObject({
      rate_limit_override: null,
      requests_per_hour: 10_000,
    });
  });

  it('refuses an unknown plan and answers 404 for an organization that does not exist', async () => {
    const org = await createOrganization(database.db, { name: 'Plans Co' });
    expect(await refusal(setPlan(database.db, org.id, 'platinum'))).toEqual([['plan', 'invalid_value']]);
    expect((await getOrganization(database.db, org.id)).plan).toBe('beta');
    expect(await setPlan(database.db, org.id, 'scale')).toMatchObject({
      plan: 'scale',
      requests_per_hour: 200_000,
    });
    const missing = org.id + 1_000_000;
    // one at a time: a refusal made before it is awaited would reject unhandled
    for (const attempt of [
      () => getOrganization(database.db, missing),
      () => setPlan(database.db, missing, 'growth'),
      () => setRateLimitOverride(database.db, missing, 5),
      () => setOrganizationSettings(database.db, missing, { invoiceGraceHours: 1 }),
    ]) {
      expect(await refusal(attempt())).toMatchObject({ code: 'NOT_FOUND' });
    }
  });

  it('keeps the grace hours when a setting is not given, and takes 0 to 720', async () => {
    const org = await createOrganization(database.db, { name: 'Grace GmbH' });
    expect(
      (await setOrganizationSettings(database.db, org.id, { invoiceGraceHours: 720 })).invoice_grace_hours,
    ).toBe(720);
    expect((await setOrganizationSettings(database.db, org.id, {})).invoice_grace_hours).toBe(720);
    expect(
      (await setOrganizationSettings(database.db, org.id, { invoiceGraceHours: 0 })).invoice_grace_hours,
    ).toBe(0);
    for (const bad of [721, -1, 1.5]) {
      expect(await refusal(setOrganizationSettings(database.db, org.id, { invoiceGraceHours: bad }))).toEqual(
        [['invoice_grace_hours', 'out_of_range']],
      );
    }
  });
});
