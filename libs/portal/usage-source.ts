import {
  getCreditBalance,
  getDailyUsage,
  getSubscriptionUsage,
  listCreditGrants,
  previewUpcomingInvoice,
  UnbillableError,
} from '../billing/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import type { CreditGrantStatus } from '../schemas/index.js';
import type { UsageReadStores } from '../usage/index.js';

/**
 * The current usage and the upcoming invoice the portal shows for one subscription. The portal
 * does not compute them: they come from the usage read-back (docs/architecture.md, "The usage read-back"), whose objects these
 * shapes follow field for field, through this one interface. Until a source is given the portal
 * says the figures are not available; it never shows figures of its own making.
 */
export interface PortalUsageSource {
  /** undefined: nothing to show for this subscription (no metered item, or not available). */
  read(orgId: number, subscriptionId: number): Promise<PortalUsage | undefined>;
  /** The customer's prepaid credits (GET /customers/{id}/credit-balance and its grants). */
  credits(orgId: number, customerId: number): Promise<PortalCredits>;
}

export interface PortalCredits {
  currency: string;
  /** null when the balance cannot be worked out (a subscription that cannot be invoiced). */
  available: string | null;
  projected: string | null;
  /** The grants still worth showing (PENDING and ACTIVE), newest first. */
  grants: {
    name: string;
    status: CreditGrantStatus;
    amount: string;
    remaining: string;
    expires_at: string | null;
  }[];
}

export interface PortalUsage {
  /** GET /subscriptions/{id}/usage (period=current). */
  usage: {
    period_start: string;
    period_end: string;
    as_of: string;
    currency: string;
    items: {
      subscription_item_id: number;
      product_name: string;
      unit_label: string | null;
      quantity: string;
      included_units: string;
      billable_quantity: string;
      /** What the billing run would charge now, before tax; null when the source does not price. */
      amount: string | null;
    }[];
  };
  /** GET /subscriptions/{id}/usage/daily over the period (UTC days, zero days included). */
  daily: { date: string; subscription_item_id: number; quantity: string }[];
  /** GET /subscriptions/{id}/upcoming-invoice; null when the source has none. */
  upcoming: {
    invoice_date: string;
    currency: string;
    lines: { description: string; quantity: string; unit_price: string; amount: string }[];
    subtotal: string;
    tax: string;
    total: string;
    /** What the customer's credits would pay of it; amount_due = total - credits_applied. */
    credits_applied: string;
    amount_due: string;
  } | null;
}

/** The portal's usage figures, read back as the public API reads them (libs/billing read-back). */
export function portalUsageSource(db: Queryable, stores: UsageReadStores): PortalUsageSource {
  return {
    async read(orgId, subscriptionId): Promise<PortalUsage | undefined> {
      // a subscription whose figures cannot be priced (UnbillableError: a currency without a minor
      // unit, a region the tax table does not know) shows as not available, never as a failed page
      const usage = await getSubscriptionUsage(db, stores, orgId, subscriptionId).catch((error) => {
        if (error instanceof UnbillableError) return undefined;
        throw error;
      });
      if (!usage?.items.length) return undefined;
      const daily = await getDailyUsage(db, stores, orgId, subscriptionId);
      const upcoming = await previewUpcomingInvoice(db, stores, orgId, subscriptionId).catch((error) => {
        if (error instanceof UnbillableError) return null;
        if (error instanceof ApiError && error.code === 'NOT_FOUND') return null;
        throw error;
      });
      return {
        usage: {
          period_start: usage.period_start,
          period_end: usage.period_end,
          as_of: usage.as_of,
          currency: usage.currency,
          items: usage.items,
        },
        daily,
        upcoming: upcoming && {
          invoice_date: upcoming.invoice_date,
          currency: upcoming.currency,
          lines: upcoming.lines,
          subtotal: upcoming.subtotal,
          tax: upcoming.tax,
          total: upcoming.total,
          credits_applied: upcoming.credits_applied,
          amount_due: upcoming.amount_due,
        },
      };
    },
    async credits(orgId, customerId): Promise<PortalCredits> {
      const [balance, active, pending] = await Promise.all([
        // a subscription that cannot be invoiced has no upcoming total: nothing is projected
        getCreditBalance(db, stores, orgId, customerId).catch((error: unknown) => {
          if (error instanceof UnbillableError) return undefined;
          throw error;
        }),
        listCreditGrants(db, orgId, customerId, { limit: 100, offset: 0, status: 'ACTIVE' }),
        listCreditGrants(db, orgId, customerId, { limit: 100, offset: 0, status: 'PENDING' }),
      ]);
      const grants = [...pending.data, ...active.data].sort((a, b) =>
        b.created_at.localeCompare(a.created_at),
      );
      return {
        currency: balance?.currency ?? grants[0]?.currency ?? '',
        available: balance?.available ?? null,
        projected: balance?.projected ?? null,
        grants: grants.map(({ name, status, amount, remaining, expires_at }) => ({
          name,
          status,
          amount,
          remaining,
          expires_at,
        })),
      };
    },
  };
}
