import { formatMoney, parseMoney } from '../../money/index.js';
import type { SubscriptionItem } from '../../schemas/index.js';

/** What publicSubscriptionItem reads of an item: a billable item or a row of subscription_items. */
export interface ItemToShow {
  subscription_item_id: number;
  product_id: number;
  product_name: string;
  quantity: number;
  unit_price: string;
  usage_type: 'licensed' | 'metered';
  included_units: string;
  /** Metered items: the usage limit of a period (entitlements); null or absent: none. */
  usage_limit?: string | null;
}

/**
 * An item as the public subscription object shows it, and subscription.updated with it: the one
 * mapper, so a subscription read, a change's answer and the event show an item alike.
 */
export function publicSubscriptionItem(item: ItemToShow): SubscriptionItem {
  return {
    id: item.subscription_item_id,
    product_id: item.product_id,
    product_name: item.product_name,
    quantity: item.quantity,
    unit_price: formatMoney(parseMoney(item.unit_price)),
    usage_type: item.usage_type,
    included_units: formatMoney(parseMoney(item.included_units)),
    usage_limit:
      item.usage_limit === null || item.usage_limit === undefined
        ? null
        : formatMoney(parseMoney(item.usage_limit)),
  };
}
