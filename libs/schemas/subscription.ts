import { z } from 'zod';
import { dateTime, decimal8, integerId, money } from './primitives.js';
import { BILLING_PERIODS } from './product.js';

export const SUBSCRIPTION_STATUSES = [
  'trialing',
  'active',
  'paused',
  'canceled',
  'past_due',
  'unpaid',
  'expired',
  'pending',
] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const SubscriptionItem = z
  .object({
    id: integerId.meta({ description: 'The identifier used when sending usage events.' }),
    product_id: integerId,
    product_name: z.string(),
    quantity: z.number().int(),
    unit_price: money,
    usage_type: z.enum(['licensed', 'metered']),
    included_units: decimal8,
  })
  .meta({ id: 'PublicSubscriptionItem' });
export type SubscriptionItem = z.output<typeof SubscriptionItem>;

export const Subscription = z
  .object({
    id: integerId,
    object: z.literal('subscription'),
    customer_id: integerId,
    status: z.enum(SUBSCRIPTION_STATUSES),
    title: z.string(),
    start_date: dateTime,
    next_billing_date: dateTime,
    billing_period: z.enum(BILLING_PERIODS),
    current_period_start: dateTime,
    current_period_end: dateTime,
    term_type: z.enum(['evergreen', 'termed']),
    initial_term_months: z.number().int().nullable(),
    auto_renew: z.boolean(),
    subscription_end_date: dateTime.nullable(),
    trial_end_date: dateTime.nullable(),
    cancel_at_period_end: z.boolean(),
    canceled_at: dateTime.nullable(),
    ended_at: dateTime.nullable(),
    items: z.array(SubscriptionItem),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'PublicSubscription' });
export type Subscription = z.output<typeof Subscription>;
