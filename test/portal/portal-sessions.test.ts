import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPortalSession,
  openPortalSession,
  type PortalAccess,
  revokePortalSession,
} from '../../libs/portal/index.js';
import { insertCustomer } from '../helpers/billing-fixtures.js';
import {
  createTestDatabase,
  recordingQueries,
  type SentQuery,
  type TestDatabase,
} from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';

/**
 * Portal sessions at the library level, on a database of this file's own: the instants a session
 * is created, expires and is revoked at, what its link opens, and which tokens are refused before
 * any database round trip.
 */
let database: TestDatabase;
let orgId: number;
let otherOrgId: number;
let quebec: number;
let ontario: number;
const BASE = 'https://billing.example.com';

beforeAll(async () => {
  database = await createTestDatabase('portal-sessions');
  const { db } = database;
  orgId = (await createTestOrg(db, { name: 'Érable Inc' })).orgId;
  otherOrgId = (await createTestOrg(db)).orgId;
  // so that no customer id here equals an organization id
  await insertCustomer(db, otherOrgId, { name: 'Elsewhere', country: 'US', state_province: 'NY' });
  quebec = (await insertCustomer(db, orgId, { name: 'Amélie', country: 'CA', state_province: 'QC' })).id;
  ontario = (await insertCustomer(db, orgId, { name: 'Olivia', country: 'CA', state_province: 'ON' })).id;
});
afterAll(() => database?.drop());

const tokenOf = (url: string) => url.slice(url.lastIndexOf('/') + 1);

describe('createPortalSession', () => {
  it('starts at the given instant and ends expires_in seconds later, under /portal of the base URL', async () => {
    const now = new Date('2026-03-01T10:00:00.123Z');
    const session = await createPortalSession(
      database.db,
      orgId,
      { customer_id: quebec, expires_in: 60 },
      { baseUrl: BASE, now },
    );
    expect(session).toMatchObject({
      object: 'portal_session',
      customer_id: quebec,
      locale: 'fr-CA',
      created_at: '2026-03-01T10:00:00.123Z',
      expires_at: '2026-03-01T10:01:00.123Z',
    });
    expect(session.url).toMatch(/^https:\/\/billing\.example\.com\/portal\/pst_[A-Za-z0-9_-]{43}$/);
    const { rows } = await database.db.query<{ created_at: Date; expires_at: Date; locale: string }>(
      'SELECT created_at, expires_at, locale FROM portal_sessions WHERE id = $1',
      [session.id],
    );
    expect(rows).toEqual([
      { created_at: now, expires_at: new Date('2026-03-01T10:01:00.123Z'), locale: 'fr-CA' },
    ]);
  });

  it('writes English to a customer outside Quebec, and the locale asked for when there is one', async () => {
    const now = new Date();
    const options = { baseUrl: BASE, now };
    const english = await createPortalSession(
      database.db,
      orgId,
      { customer_id: ontario, expires_in: 60 },
      options,
    );
    expect(english.locale).toBe('en');
    const asked = await createPortalSession(
      database.db,
      orgId,
      { customer_id: ontario, locale: 'fr-CA', expires_in: 60 },
      options,
    );
    expect(asked.locale).toBe('fr-CA');
    // the pages opened from it are written in that locale
    expect(await openPortalSession(database.db, tokenOf(asked.url), now)).toMatchObject({ locale: 'fr-CA' });
  });

  it("is a 404 for another organization's customer", async () => {
    await expect(
      createPortalSession(
        database.db,
        otherOrgId,
        { customer_id: quebec, expires_in: 60 },
        { baseUrl: BASE },
      ),
    ).rejects.toMatchObject({ status: 404 });
  });
});

describe('openPortalSession', () => {
  it('grants the customer of the organization, with both names, the locale and the expiry', async () => {
    const now = new Date();
    const session = await createPortalSession(
      database.db,
      orgId,
      { customer_id: quebec, locale: 'en', expires_in: 600 },
      { baseUrl: BASE, now },
    );
    expect(await openPortalSession(database.db, tokenOf(session.url), now)).toEqual({
      kind: 'granted',
      orgId,
      customerId: quebec,
      locale: 'en',
      expiresAt: new Date(session.expires_at),
      organizationName: 'Érable Inc',
      customerName: 'Amélie',
    } satisfies PortalAccess);
  });

  it('refuses a token of the wrong shape without a database round trip', async () => {
    const session = await createPortalSession(
      database.db,
      orgId,
      { customer_id: quebec, expires_in: 600 },
      { baseUrl: BASE },
    );
    const token = tokenOf(session.url);
    const sent: SentQuery[] = [];
    const db = recordingQueries(database.db, sent);
    // the real token with something before or after it, one character short, or another alphabet
    for (const malformed of [
      `x${token}`,
      `/${token}`,
      `${token}x`,
      `${token}\n`,
      `${token}A`,
      token.slice(0, -1),
      `${token.slice(0, -1)}+`,
      `pst-${token.slice(4)}`,
      '',
    ]) {
      expect(await openPortalSession(db, malformed), JSON.stringify(malformed)).toEqual({ kind: 'unknown' });
    }
    expect(sent).toEqual([]);
    // a token of the right shape that names no session is looked up, once, and unknown too
    expect(await openPortalSession(db, `pst_${'A'.repeat(43)}`)).toEqual({ kind: 'unknown' });
    expect(sent).toHaveLength(1);
    expect((await openPortalSession(db, token)).kind).toBe('granted');
  });
});

describe('revokePortalSession', () => {
  it('records the instant it was revoked at, once: revoking again is a 404 that keeps it', async () => {
    const session = await createPortalSession(
      database.db,
      orgId,
      { customer_id: quebec, expires_in: 600 },
      { baseUrl: BASE },
    );
    const at = new Date('2026-02-03T04:05:06.789Z');
    await revokePortalSession(database.db, orgId, session.id, at);
    await expect(
      revokePortalSession(database.db, orgId, session.id, new Date('2026-02-04T00:00:00Z')),
    ).rejects.toMatchObject({ status: 404 });
    const { rows } = await database.db.query<{ revoked_at: Date }>(
      'SELECT revoked_at FROM portal_sessions WHERE id = $1',
      [session.id],
    );
    expect(rows).toEqual([{ revoked_at: at }]);
    expect(await openPortalSession(database.db, tokenOf(session.url))).toEqual({ kind: 'revoked' });
  });

  it("leaves another organization's session open: a 404, and the session still opens", async () => {
    const session = await createPortalSession(
      database.db,
      orgId,
      { customer_id: quebec, expires_in: 600 },
      { baseUrl: BASE },
    );
    await expect(revokePortalSession(database.db, otherOrgId, session.id)).rejects.toMatchObject({
      status: 404,
    });
    await expect(revokePortalSession(database.db, orgId, 'not-a-uuid')).rejects.toMatchObject({
      status: 404,
    });
    expect((await openPortalSession(database.db, tokenOf(session.url))).kind).toBe('granted');
  });

  it('says revoked rather than expired for a session that is both', async () => {
    const created = new Date('2026-01-01T00:00:00Z');
    const session = await createPortalSession(
      database.db,
      orgId,
      { customer_id: quebec, expires_in: 60 },
      { baseUrl: BASE, now: created },
    );
    const token = tokenOf(session.url);
    expect(await openPortalSession(database.db, token, new Date('2026-01-01T00:01:00Z'))).toEqual({
      kind: 'expired',
    });
    await revokePortalSession(database.db, orgId, session.id);
    expect(await openPortalSession(database.db, token, new Date('2026-01-01T00:01:00Z'))).toEqual({
      kind: 'revoked',
    });
  });
});
