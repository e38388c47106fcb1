import type { Database, Queryable } from '../../db/index.js';
import { isUniqueViolation } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import { type CreditGrant, type CreditTopUp, CreditTopUpRequest } from '../../schemas/index.js';
import type { UsageReadStores } from '../../usage/index.js';
import { assertPayableAmount, createCreditGrant } from '../collection/index.js';
import { parseAmount, parseInput } from '../domain/index.js';
import { getCreditBalance } from '../read-back/index.js';

/**
 * Automatic top-up (docs/decisions.md, "Credits"): when a customer's `projected` balance falls
 * below its threshold, one paid grant brings it back to the target. Checked whenever `projected`
 * may have moved (usage counted, a posting, a void, an expiry); never a second while one is
 * PENDING: the partial unique index credit_grants_one_pending_top_up refuses it, whichever process
 * races to make it.
 */

export const TOP_UP_GRANT_NAME = 'Automatic top-up';

interface TopUpRow {
  enabled: boolean;
  threshold: string;
  target: string;
  updated_at: Date;
}

function toCreditTopUp(customerId: number, row: TopUpRow | undefined): CreditTopUp {
  return {
    object: 'credit_top_up',
    customer_id: customerId,
    enabled: row?.enabled ?? false,
    threshold: formatMoney(parseMoney(row?.threshold ?? '0')),
    target: formatMoney(parseMoney(row?.target ?? '0')),
    updated_at: row?.updated_at.toISOString() ?? null,
  };
}

async function assertCustomer(db: Queryable, orgId: number, customerId: number): Promise<string> {
  const { rows } = await db.query<{ currency: string }>(
    `SELECT o.default_currency AS currency FROM customers c JOIN organizations o ON o.id = c.org_id
      WHERE c.org_id = $1 AND c.id = $2`,
    [orgId, customerId],
  );
  if (!rows[0]) throw ApiError.notFound(`Customer ${customerId}`);
  return rows[0].currency.trim();
}

export async function getCreditTopUp(db: Queryable, orgId: number, customerId: number): Promise<CreditTopUp> {
  await assertCustomer(db, orgId, customerId);
  const { rows } = await db.query<TopUpRow>(
    `SELECT enabled, threshold::text, target::text, updated_at FROM credit_top_ups
      WHERE org_id = $1 AND customer_id = $2`,
    [orgId, customerId],
  );
  return toCreditTopUp(customerId, rows[0]);
}

/** PUT: threshold and target in whole minor units, 0 <= threshold < target. */
export async function setCreditTopUp(
  db: Queryable,
  orgId: number,
  customerId: number,
  input: unknown,
): Promise<CreditTopUp> {
  const request = parseInput(CreditTopUpRequest, input);
  const currency = await assertCustomer(db, orgId, customerId);
  const threshold = parseAmount('threshold', request.threshold, { allowZero: true });
  const target = parseAmount('target', request.target);
  assertPayableAmount('threshold', threshold, currency);
  assertPayableAmount('target', target, currency);
  if (threshold >= target) {
    throw ApiError.validation([
      { field: 'threshold', message: 'Must be below target.', code: 'out_of_range' },
    ]);
  }
  const { rows } = await db.query<TopUpRow>(
    `INSERT INTO credit_top_ups (org_id, customer_id, enabled, threshold, target)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (org_id, customer_id) DO UPDATE
       SET enabled = EXCLUDED.enabled, threshold = EXCLUDED.threshold, target = EXCLUDED.target, updated_at = now()
     RETURNING enabled, threshold::text, target::text, updated_at`,
    [orgId, customerId, request.enabled, formatMoney(threshold), formatMoney(target)],
  );
  return toCreditTopUp(customerId, rows[0]);
}

/**
 * Checks the customers' top-ups (those enabled, with no top-up waiting for its payment) and makes
 * the grant each one below its threshold needs. Returns the grants made.
 */
export async function checkTopUps(
  db: Database,
  stores: UsageReadStores,
  customers: readonly { orgId: number; customerId: number }[],
  now: Date = new Date(),
): Promise<CreditGrant[]> {
  if (customers.length === 0) return [];
  const { rows } = await db.query<{ org_id: number; customer_id: number; threshold: string; target: string }>(
    `SELECT t.org_id, t.customer_id, t.threshold::text, t.target::text
       FROM credit_top_ups t
       JOIN unnest($1::bigint[], $2::bigint[]) AS k(org_id, customer_id)
         ON k.org_id = t.org_id AND k.customer_id = t.customer_id
      WHERE t.enabled
        AND NOT EXISTS (SELECT 1 FROM credit_grants g WHERE g.org_id = t.org_id AND g.customer_id = t.customer_id
                          AND g.source = 'top_up' AND g.status = 'PENDING')`,
    [customers.map((c) => c.orgId), customers.map((c) => c.customerId)],
  );
  const made: CreditGrant[] = [];
  for (const setting of rows) {
    const grant = await topUpIfBelow(db, stores, setting, now);
    if (grant) made.push(grant);
  }
  return made;
}

async function topUpIfBelow(
  db: Database,
  stores: UsageReadStores,
  setting: { org_id: number; customer_id: number; threshold: string; target: string },
  now: Date,
): Promise<CreditGrant | undefined> {
  const balance = await getCreditBalance(db, stores, setting.org_id, setting.customer_id, now);
  const projected = parseMoney(balance.projected);
  if (projected >= parseMoney(setting.threshold)) return undefined;
  const amount = parseMoney(setting.target) - projected;
  try {
    const { grant } = await db.transaction((tx) =>
      createCreditGrant(tx, {
        orgId: setting.org_id,
        customerId: setting.customer_id,
        source: 'top_up',
        input: { amount: formatMoney(amount), category: 'paid', name: TOP_UP_GRANT_NAME },
        now,
      }),
    );
    return grant;
  } catch (error) {
    // another process made this customer's top-up first: one is enough
    if (isUniqueViolation(error, 'credit_grants_one_pending_top_up')) return undefined;
    throw error;
  }
}
