import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { formatScaled, parseScaled } from '../money/index.js';
import { type BillingPeriod, type Entitlement, parseIntegerId } from '../schemas/index.js';
import { type CounterPeriod, periodAt, type UsageCounter } from '../usage/index.js';

/**
 * May this customer use this product now (docs/decisions.md, "Where the entitlement counter lives
 * and why"): a read model comparing an item's `usage_limit` (the item set's) with what usage
 * counted in its running period (the counter ingest keeps, read your writes). One Postgres query
 * for the customer's items and one counter read (one Redis round trip) per check.
 */

const SCALE = 8;
/** The statuses whose items may be used; a canceled subscription's items stay listed without access. */
const WITH_ACCESS = new Set(['active', 'trialing']);

interface ItemRow {
  customer_id: number;
  subscription_item_id: number | null;
  product_id: number | null;
  usage_type: 'licensed' | 'metered' | null;
  usage_limit: string | null;
  status: string | null;
  start_date: Date | null;
  billing_period: BillingPeriod | null;
  billing_anchor_day: number | null;
  current_period_start: Date | null;
  current_period_end: Date | null;
}

/** GET /customers/{id}/entitlements: every current item of the customer's subscriptions, by item id. */
export async function listEntitlements(
  db: Queryable,
  counter: UsageCounter,
  orgId: number,
  customerId: number | string,
  now: Date = new Date(),
): Promise<Entitlement[]> {
  return entitlementsOf(db, counter, orgId, customerId, undefined, now);
}

/**
 * GET /customers/{id}/entitlements/{product_id}: 404 when the customer (of this organization) has
 * no item of the product. Of several items of it (two subscriptions), one with access first,
 * then the newest.
 */
export async function getEntitlement(
  db: Queryable,
  counter: UsageCounter,
  orgId: number,
  customerId: number | string,
  productId: number | string,
  now: Date = new Date(),
): Promise<Entitlement> {
  const product = parseIntegerId(productId);
  if (product === undefined) throw ApiError.notFound(`Entitlement to product ${productId}`);
  const found = await entitlementsOf(db, counter, orgId, customerId, product, now);
  if (!found.length) throw ApiError.notFound(`Entitlement to product ${productId}`);
  return found.reduce((best, candidate) =>
    candidate.has_access !== best.has_access
      ? candidate.has_access
        ? candidate
        : best
      : candidate.subscription_item_id > best.subscription_item_id
        ? candidate
        : best,
  );
}

async function entitlementsOf(
  db: Queryable,
  counter: UsageCounter,
  orgId: number,
  customerId: number | string,
  productId: number | undefined,
  now: Date,
): Promise<Entitlement[]> {
  const id = parseIntegerId(customerId);
  if (id === undefined) throw ApiError.notFound(`Customer ${customerId}`);
  // the customer and its items in one statement: no row at all is a customer this org does not have
  const { rows } = await db.query<ItemRow>(
    `SELECT c.id AS customer_id, si.id AS subscription_item_id, si.product_id, si.usage_type,
            si.usage_limit::text AS usage_limit, s.status, s.start_date, s.billing_period, s.billing_anchor_day,
            s.current_period_start, s.current_period_end
       FROM customers c
       LEFT JOIN subscriptions s ON s.org_id = c.org_id AND s.customer_id = c.id
       LEFT JOIN subscription_items si ON si.org_id = s.org_id AND si.subscription_id = s.id
                                      AND si.removed_at IS NULL AND ($3::bigint IS NULL OR si.product_id = $3)
      WHERE c.org_id = $1 AND c.id = $2
      ORDER BY si.id`,
    [orgId, id, productId ?? null],
  );
  if (!rows.length) throw ApiError.notFound(`Customer ${customerId}`);
  const items = rows.filter((row) => row.subscription_item_id !== null);
  const periods = items.map((row) => periodOf(row, now.getTime()));
  const metered = items.flatMap((row, i) =>
    row.usage_type === 'metered'
      ? [{ orgId, subscriptionItemId: row.subscription_item_id!, ...periods[i]! }]
      : [],
  );
  const usedOfMetered = await counter.used(metered satisfies CounterPeriod[]);
  // the next period's counters, built ahead in the background: no rebuild wait when it begins
  counter.prepare(
    items.flatMap((row, i) =>
      row.usage_type === 'metered' && WITH_ACCESS.has(row.status!)
        ? [{ orgId, subscriptionItemId: row.subscription_item_id!, ...periodOf(row, periods[i]!.endMs) }]
        : [],
    ),
  );
  const used = new Map(metered.map((period, i) => [period.subscriptionItemId, usedOfMetered[i]!]));
  return items.map((row, i) => {
    const usedNow = used.get(row.subscription_item_id!) ?? 0n;
    const limit = row.usage_limit === null ? null : parseScaled(row.usage_limit, SCALE, 'half-even');
    return {
      product_id: Number(row.product_id),
      subscription_item_id: Number(row.subscription_item_id),
      has_access: WITH_ACCESS.has(row.status!) && (limit === null || usedNow < limit),
      usage_limit: limit === null ? null : formatScaled(limit, SCALE),
      used: formatScaled(usedNow, SCALE),
      remaining: limit === null ? null : formatScaled(limit > usedNow ? limit - usedNow : 0n, SCALE),
      period_end: new Date(periods[i]!.endMs).toISOString(),
    };
  });
}

/**
 * The period `used` counts: the one holding now for a running subscription (the billing run may
 * not have moved it on yet); the stored one for any other (canceled, pending, expired).
 */
function periodOf(row: ItemRow, nowMs: number): { startMs: number; endMs: number } {
  const stored = { startMs: row.current_period_start!.getTime(), endMs: row.current_period_end!.getTime() };
  if (!WITH_ACCESS.has(row.status!) && row.status !== 'past_due') return stored;
  return periodAt(
    {
      startDateMs: row.start_date!.getTime(),
      billingPeriod: row.billing_period!,
      anchorDay: row.billing_anchor_day!,
      currentPeriodStartMs: stored.startMs,
      currentPeriodEndMs: stored.endMs,
    },
    nowMs,
  );
}
