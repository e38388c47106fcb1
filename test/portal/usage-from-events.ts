import type { Queryable } from '../../libs/db/index.js';
import { formatMoney, parseMoney } from '../../libs/money/index.js';
import type { PortalUsage, PortalUsageSource } from '../../libs/portal/index.js';
import { getSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';

const DAY_MS = 86_400_000;

function billable(quantity: string, included: string): string {
  const above = parseMoney(quantity) - parseMoney(included);
  return formatMoney(above > 0n ? above : 0n);
}

/**
 * A PortalUsageSource for the browser test, until the usage read-back (issue 23) is wired in:
 * quantities are those of real usage events in Postgres, summed per UTC day of the subscription's
 * current period by the existing aggregation port. It prices nothing (amount null) and has no
 * upcoming invoice: those are the read-back's to give.
 */
export function usageFromEvents(db: Queryable): PortalUsageSource {
  const aggregator = new PostgresUsageAggregator(db);
  return {
    async read(orgId, subscriptionId): Promise<PortalUsage | undefined> {
      const subscription = await getSubscription(db, orgId, subscriptionId);
      const metered = subscription.items.filter((item) => item.usage_type === 'metered');
      if (metered.length === 0) return undefined;
      const start = new Date(subscription.current_period_start);
      const end = new Date(subscription.current_period_end);
      const ids = metered.map((item) => item.id);
      const days: Date[] = [];
      for (let day = start.getTime(); day < end.getTime(); day += DAY_MS) days.push(new Date(day));
      const perDay = await Promise.all(
        days.map((day) => aggregator.totals(orgId, ids, day, new Date(day.getTime() + DAY_MS))),
      );
      const totals = await aggregator.totals(orgId, ids, start, end);
      return {
        usage: {
          period_start: subscription.current_period_start,
          period_end: subscription.current_period_end,
          as_of: new Date().toISOString(),
          currency: 'CAD',
          items: metered.map((item) => ({
            subscription_item_id: item.id,
            product_name: item.product_name,
            unit_label: null,
            quantity: totals.get(item.id)!,
            included_units: item.included_units,
            billable_quantity: billable(totals.get(item.id)!, item.included_units),
            amount: null,
          })),
        },
        daily: days.flatMap((day, i) =>
          ids.map((id) => ({
            date: day.toISOString().slice(0, 10),
            subscription_item_id: id,
            quantity: perDay[i]!.get(id)!,
          })),
        ),
        upcoming: null,
      };
    },
  };
}
