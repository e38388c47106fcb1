import { createHash, randomBytes } from 'node:crypto';
import { getCustomer } from '../customers/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { defaultLocaleOf, type Locale } from '../i18n/index.js';
import { isUuid } from '../schemas/index.js';

/*
 * A portal session token is `pst_` + 32 random bytes (256 bits) in base64url. Only its SHA-256 is
 * stored, and it is looked up by that hash, so the exact text must be given: changing any
 * character of it finds nothing. The token is shown once (the url POST /portal-sessions answers)
 * and never logged: routes log their pattern, not the path.
 */

const PREFIX = 'pst_';
const TOKEN = /^pst_[A-Za-z0-9_-]{43}$/;
/** Where portal pages are served, below PUBLIC_URL. */
export const PORTAL_PATH = '/portal';

function hashOf(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export interface PortalSessionRecord {
  id: string;
  object: 'portal_session';
  customer_id: number;
  locale: Locale;
  url: string;
  created_at: string;
  expires_at: string;
}

export interface NewPortalSession {
  customer_id: number;
  locale?: Locale | undefined;
  /** Seconds, 60..86400 (the CreatePortalSession schema, libs/schemas/portal-session.ts). */
  expires_in: number;
}

/**
 * A session for one customer of the organization (404 for another organization's customer, as
 * everywhere). Without a locale, Quebec customers read French, others English.
 */
export async function createPortalSession(
  db: Queryable,
  orgId: number,
  input: NewPortalSession,
  { baseUrl, now = new Date() }: { baseUrl: string; now?: Date },
): Promise<PortalSessionRecord> {
  const customer = await getCustomer(db, orgId, input.customer_id);
  const locale = input.locale ?? defaultLocaleOf(customer);
  const token = PREFIX + randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + input.expires_in * 1000);
  const { rows } = await db.query<{ id: string; created_at: Date }>(
    `INSERT INTO portal_sessions (org_id, customer_id, token_hash, locale, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, created_at`,
    [orgId, customer.id, hashOf(token), locale, now, expiresAt],
  );
  return {
    id: rows[0]!.id,
    object: 'portal_session',
    customer_id: customer.id,
    locale,
    url: `${baseUrl}${PORTAL_PATH}/${token}`,
    created_at: rows[0]!.created_at.toISOString(),
    expires_at: expiresAt.toISOString(),
  };
}

/**
 * Revokes a session of the organization: its link opens nothing from then on (a page saying so,
 * 410). A session revoked already, another organization's or an unknown id is a 404.
 */
export async function revokePortalSession(
  db: Queryable,
  orgId: number,
  sessionId: string,
  now = new Date(),
): Promise<void> {
  const { rowCount } = isUuid(sessionId)
    ? await db.query(
        'UPDATE portal_sessions SET revoked_at = $3 WHERE org_id = $1 AND id = $2 AND revoked_at IS NULL',
        [orgId, sessionId, now],
      )
    : { rowCount: 0 };
  if (!rowCount) throw ApiError.notFound(`Portal session ${sessionId}`);
}

/** A link that opened. */
export type Granted<T> = Extract<T, { kind: 'granted' }>;

/** What a link opens: one customer of one organization, or nothing (and why). */
export type PortalAccess =
  | {
      kind: 'granted';
      orgId: number;
      customerId: number;
      locale: Locale;
      expiresAt: Date;
      /** Read with the session (one round trip): the page heads with them. */
      organizationName: string;
      customerName: string;
    }
  | { kind: 'expired' }
  | { kind: 'revoked' }
  | { kind: 'unknown' };

export async function openPortalSession(
  db: Queryable,
  token: string,
  now = new Date(),
): Promise<PortalAccess> {
  if (!TOKEN.test(token)) return { kind: 'unknown' };
  const { rows } = await db.query<{
    org_id: number;
    customer_id: number;
    locale: Locale;
    expires_at: Date;
    revoked_at: Date | null;
    organization_name: string;
    customer_name: string;
  }>(
    `SELECT s.org_id, s.customer_id, s.locale, s.expires_at, s.revoked_at, o.name AS organization_name,
            c.name AS customer_name
       FROM portal_sessions s
       JOIN organizations o ON o.id = s.org_id
       JOIN customers c ON c.org_id = s.org_id AND c.id = s.customer_id
      WHERE s.token_hash = $1`,
    [hashOf(token)],
  );
  const session = rows[0];
  if (!session) return { kind: 'unknown' };
  if (session.revoked_at !== null) return { kind: 'revoked' };
  // a session is valid before its expiry instant, not at it
  if (session.expires_at.getTime() <= now.getTime()) return { kind: 'expired' };
  return {
    kind: 'granted',
    orgId: Number(session.org_id),
    customerId: Number(session.customer_id),
    locale: session.locale,
    expiresAt: session.expires_at,
    organizationName: session.organization_name,
    customerName: session.customer_name,
  };
}
