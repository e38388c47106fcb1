import { z } from 'zod';
import { dateTime, decimal8, integerId, money, quantity4 } from './primitives.js';
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
    usage_limit: decimal8.nullable().meta({
      description:
        'Metered items only: the usage per billing period the entitlement check allows (has_access false from there); null: no limit.',
    }),
  })
  .meta({ id: 'PublicSubscriptionItem' });
export type SubscriptionItem = z.output<typeof SubscriptionItem>;

export const PendingChangeItem = z
  .object({
    id: integerId.nullable().meta({ description: 'The item kept; null for an item the change adds.' }),
    product_id: integerId,
    quantity: z.number().int(),
    included_units: decimal8,
    usage_limit: decimal8.nullable(),
  })
  .meta({ id: 'PendingChangeItem' });

export const PendingChange = z
  .object({
    items: z.array(PendingChangeItem).meta({ description: 'The whole item set from `effective_at` on.' }),
    effective_at: dateTime.meta({
      description: 'The end of the running period: the billing run applies it then.',
    }),
  })
  .meta({
    id: 'PendingChange',
    description: 'A change scheduled with `effective: "period_end"`; a later change replaces it.',
  });
export type PendingChange = z.output<typeof PendingChange>;

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
    pending_change: PendingChange.nullable(),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'PublicSubscription' });
export type Subscription = z.output<typeof Subscription>;

/**
 * A usage limit as a request gives it: a non-negative decimal (a string, or a whole JSON number),
 * like included_units, or null for no limit.
 */
export const usageLimitInput = z
  .union([z.string(), z.number().refine(Number.isSafeInteger, 'Send a decimal as a string ("2.5").')])
  .transform((value) => (typeof value === 'number' ? String(value) : value.trim()))
  .pipe(
    z
      .string()
      .regex(/^\d{1,30}(\.\d{1,8})?$/, 'Must be a non-negative decimal with at most 8 fractional digits.'),
  )
  .nullable();

export const SubscriptionChangeItem = z
  .strictObject({
    id: integerId.optional().meta({ description: 'Keeps this item of the subscription.' }),
    product_id: integerId.optional().meta({ description: 'Adds an item of this product.' }),
    quantity: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .optional()
      .meta({ description: 'Licensed items only. Default: the kept quantity, or 1 for an added item.' }),
    included_units: z
      .union([z.string(), z.number().refine(Number.isSafeInteger, 'Send a decimal as a string ("2.5").')])
      .transform((value) => (typeof value === 'number' ? String(value) : value.trim()))
      .pipe(
        z
          .string()
          .regex(
            /^\d{1,30}(\.\d{1,8})?$/,
            'Must be a non-negative decimal with at most 8 fractional digits.',
          ),
      )
      .optional()
      .meta({ description: 'Metered items only: usage per period that is not charged.' }),
    usage_limit: usageLimitInput.optional().meta({
      description:
        'Metered items only: the usage per billing period the entitlement check allows; null clears it. Default: the kept limit, or none for an added item.',
    }),
  })
  .superRefine((entry, ctx) => {
    if ((entry.id === undefined) === (entry.product_id === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['id'],
        message: 'Give either `id` (keep an item) or `product_id` (add one), not both and not neither.',
      });
    }
  })
  .meta({ id: 'SubscriptionChangeItem' });

export const SubscriptionChangeRequest = z
  .strictObject({
    items: z
      .array(SubscriptionChangeItem)
      .min(1)
      .max(100)
      .meta({ description: 'The whole new item set: an item left out is removed.' }),
    effective: z.enum(['now', 'period_end']).default('now'),
    proration: z.enum(['prorate', 'none']).default('prorate'),
    preview: z
      .boolean()
      .default(false)
      .meta({ description: 'Answer what the change would do; write nothing.' }),
  })
  .superRefine((change, ctx) => {
    const seen = new Set<number>();
    change.items.forEach((entry, index) => {
      if (entry.id === undefined) return;
      if (seen.has(entry.id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['items', index, 'id'],
          message: `Item ${entry.id} is listed twice.`,
        });
      }
      seen.add(entry.id);
    });
  })
  .meta({ id: 'SubscriptionChangeRequest' });
export type SubscriptionChangeRequest = z.input<typeof SubscriptionChangeRequest>;

/**
 * An item id in a change's answer. A preview draws no id: an item it would add shows a provisional
 * negative one (docs/decisions.md), which its proration lines name too.
 */
const changedItemId = z
  .number()
  .int()
  .meta({
    description:
      'In a preview, an item the change would add has a provisional id, -1, -2, ... in the order of the entries; ' +
      'it gets its own id when the change is applied.',
  });

/** The subscription a change answers: as GET /subscriptions/{id}, with a preview's provisional ids. */
const ChangedSubscription = Subscription.extend({
  items: z.array(SubscriptionItem.extend({ id: changedItemId }).meta({ id: 'ChangedSubscriptionItem' })),
}).meta({ id: 'ChangedSubscription' });

export const ProrationLine = z
  .object({
    description: z.string(),
    subscription_item_id: changedItemId,
    quantity: quantity4,
    unit_price: money.meta({
      description:
        "The price per unit and period the amount was computed from: for a tiered price, the average at this quantity (quantity x unit_price is the whole period's amount, which the line prorates).",
    }),
    amount: money.meta({ description: "Negative for a credit; in the currency's minor unit." }),
    period_start: dateTime,
    period_end: dateTime,
  })
  .meta({ id: 'ProrationLine' });

export const SubscriptionChange = z
  .object({
    subscription: ChangedSubscription,
    proration_lines: z
      .array(ProrationLine)
      .meta({ description: 'Lines the next invoice of the subscription carries for this change.' }),
    effective_at: dateTime,
  })
  .meta({ id: 'SubscriptionChange' });
export type SubscriptionChange = z.output<typeof SubscriptionChange>;
