import type { Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import type { CreditBalance } from '../../schemas/index.js';
import type { UsageReadStores } from '../../usage/index.js';
import { isUsable, readActiveGrants, toBurnableGrant } from '../credits/index.js';
import { previewUpcomingInvoice } from './usage-read-back.js';

/**
 * A customer's credits against what is running up (docs/decisions.md, "Credits"): `available` is
 * what its grants can pay now, `pending` the totals of its subscriptions' upcoming invoices in the
 * credits' currency (the very previews GET /subscriptions/{id}/upcoming-invoice answers), and
 * `projected` the difference. `as_of` is the oldest of those previews' usage freshness.
 */
export async function getCreditBalance(
  db: Queryable,
  stores: UsageReadStores,
  orgId: number,
  customerId: number,
  now: Date = new Date(),
): Promise<CreditBalance> {
  const { rows } = await db.query<{ currency: string; subscription_ids: number[] }>(
    `SELECT o.default_currency AS currency,
            array(SELECT s.id FROM subscriptions s
                   WHERE s.org_id = c.org_id AND s.customer_id = c.id AND s.currency = o.default_currency
                     AND s.status IN ('active', 'trialing', 'past_due', 'unpaid', 'pending')
                   ORDER BY s.id) AS subscription_ids
       FROM customers c JOIN organizations o ON o.id = c.org_id
      WHERE c.org_id = $1 AND c.id = $2`,
    [orgId, customerId],
  );
  const customer = rows[0];
  if (!customer) throw ApiError.notFound(`Customer ${customerId}`);
  const currency = customer.currency.trim();
  const [grants, upcoming] = await Promise.all([
    readActiveGrants(db, orgId, customerId),
    Promise.all(customer.subscription_ids.map((id) => upcomingOrNone(db, stores, orgId, id))),
  ]);
  const usable = grants.map(toBurnableGrant).filter((grant) => isUsable(grant, currency, now));
  const available = usable.reduce((sum, grant) => sum + parseMoney(grant.remaining), 0n);
  const previews = upcoming.filter((preview) => preview !== undefined);
  const pending = previews.reduce((sum, preview) => sum + parseMoney(preview.total), 0n);
  const asOf = previews.reduce(
    (oldest, preview) => (Date.parse(preview.as_of) < oldest.getTime() ? new Date(preview.as_of) : oldest),
    now,
  );
  const expiring = usable.filter((grant) => grant.expires_at !== null);
  const soonest = Math.min(...expiring.map((grant) => grant.expires_at!.getTime()));
  const next = expiring.filter((grant) => grant.expires_at!.getTime() === soonest);
  return {
    object: 'credit_balance',
    customer_id: customerId,
    currency,
    available: formatMoney(available),
    pending: formatMoney(pending),
    projected: formatMoney(available - pending),
    as_of: asOf.toISOString(),
    next_expiry: next.length
      ? {
          amount: formatMoney(next.reduce((sum, grant) => sum + parseMoney(grant.remaining), 0n)),
          expires_at: new Date(soonest).toISOString(),
        }
      : null,
  };
}

/** The upcoming invoice of a subscription, or none when it has none (a trial ending, say). */
async function upcomingOrNone(db: Queryable, stores: UsageReadStores, orgId: number, subscriptionId: number) {
  try {
    return await previewUpcomingInvoice(db, stores, orgId, subscriptionId, { only: 'totals' });
  } catch (error) {
    if (error instanceof ApiError && error.code === 'NOT_FOUND') return undefined;
    throw error;
  }
}
