import { z } from 'zod';
import { dateTime, decimal8, integerId } from './primitives.js';

export const Entitlement = z
  .object({
    product_id: integerId,
    subscription_item_id: integerId,
    has_access: z.boolean().meta({
      description:
        'The subscription is active or trialing, and `used` is below `usage_limit` (or there is no limit).',
    }),
    usage_limit: decimal8
      .nullable()
      .meta({ description: "The item's limit per billing period; null: none." }),
    used: decimal8.meta({
      description:
        "The item's usage in the running period: every event answered 201 before this read, voids taken off.",
    }),
    remaining: decimal8
      .nullable()
      .meta({ description: 'max(0, usage_limit - used); null when there is no limit.' }),
    period_end: dateTime.meta({ description: 'The end of the period `used` counts (exclusive).' }),
  })
  .meta({ id: 'Entitlement' });
export type Entitlement = z.output<typeof Entitlement>;
