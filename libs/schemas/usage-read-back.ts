import { z } from 'zod';
import { TAX_TYPES } from './invoice.js';
import { date, dateTime, decimal8, integerId, money } from './primitives.js';
import { UsageEvent } from './usage-event.js';

/** docs/architecture.md, "The usage read-back": a recorded event as POST returns it, plus whether it was voided. */
export const UsageEventWithStatus = UsageEvent.extend({
  status: z.enum(['ACTIVE', 'VOIDED']).meta({ description: 'VOIDED events count nowhere.' }),
  voided_at: dateTime.nullable(),
}).meta({
  id: 'UsageEventWithStatus',
  examples: [
    {
      id: '3f2c8a4e-1b7d-4c9e-a0f1-2d3e4f5a6b7c',
      object: 'usage_event',
      subscription_item_id: 42,
      quantity: 1500,
      timestamp: '2026-11-20T14:00:00.000Z',
      idempotency_key: 'req-2026-11-20-0001',
      recorded_at: '2026-11-20T14:00:00.120Z',
      status: 'VOIDED',
      voided_at: '2026-11-21T09:30:00.000Z',
    },
  ],
});
export type UsageEventWithStatus = z.output<typeof UsageEventWithStatus>;

export const SubscriptionUsageItem = z
  .object({
    subscription_item_id: integerId,
    product_id: integerId,
    product_name: z.string(),
    unit_label: z.string(),
    quantity: decimal8.meta({ description: 'Every non-voided event of the period, summed.' }),
    included_units: decimal8,
    billable_quantity: decimal8.meta({ description: 'quantity above included_units, never below 0.' }),
    amount: money.meta({ description: 'What the billing run would charge for this item now, before tax.' }),
    late_quantity: decimal8.meta({
      description:
        "For a period already invoiced and posted: the part of quantity counted after its invoice, billed (or waiting to be billed) as late usage on the subscription's next invoice; quantity - late_quantity is what the period's invoice billed, less what a correction (a credit note's void) took back of it; never negative. 0 for a period not posted.",
    }),
  })
  .meta({ id: 'SubscriptionUsageItem' });

export const SubscriptionUsage = z
  .object({
    object: z.literal('subscription_usage'),
    subscription_id: integerId,
    period_start: dateTime,
    period_end: dateTime,
    as_of: dateTime.meta({ description: 'Every event answered 201 before this instant is counted.' }),
    lag_seconds: z.number().min(0).meta({ description: 'now - as_of, in seconds.' }),
    currency: z.string(),
    items: z.array(SubscriptionUsageItem),
    total_amount: money.meta({ description: "Sum of the items' amounts, before tax." }),
  })
  .meta({
    id: 'SubscriptionUsage',
    examples: [
      {
        object: 'subscription_usage',
        subscription_id: 7,
        period_start: '2026-11-01T00:00:00.000Z',
        period_end: '2026-12-01T00:00:00.000Z',
        as_of: '2026-11-27T22:00:00.500Z',
        lag_seconds: 0.5,
        currency: 'CAD',
        items: [
          {
            subscription_item_id: 42,
            product_id: 3,
            product_name: 'API calls',
            unit_label: 'call',
            quantity: '12500.00000000',
            included_units: '10000.00000000',
            billable_quantity: '2500.00000000',
            amount: '25.00000000',
            late_quantity: '0.00000000',
          },
        ],
        total_amount: '25.00000000',
      },
    ],
  });
export type SubscriptionUsage = z.output<typeof SubscriptionUsage>;

export const DailyUsagePoint = z
  .object({
    date,
    subscription_item_id: integerId,
    quantity: decimal8,
  })
  .meta({
    id: 'DailyUsagePoint',
    examples: [{ date: '2026-11-20', subscription_item_id: 42, quantity: '1500.00000000' }],
  });
export type DailyUsagePoint = z.output<typeof DailyUsagePoint>;

export const UpcomingInvoiceLine = z
  .object({
    description: z.string(),
    subscription_item_id: integerId,
    product_id: integerId,
    quantity: z.string().meta({ description: 'Decimal string.' }),
    unit_price: money,
    amount: money.meta({ description: 'The line before tax.' }),
  })
  .meta({ id: 'UpcomingInvoiceLine' });

export const UpcomingInvoice = z
  .object({
    object: z.literal('upcoming_invoice'),
    subscription_id: integerId,
    customer_id: integerId,
    period_start: dateTime,
    period_end: dateTime,
    invoice_date: date,
    as_of: dateTime,
    currency: z.string(),
    lines: z.array(UpcomingInvoiceLine),
    subtotal: money,
    tax_type: z.enum(TAX_TYPES).nullable(),
    tax: money,
    total: money,
    credits_applied: money.meta({
      description:
        "What the customer's credit grants would pay if it were posted now (the posting's own burn-down).",
    }),
    amount_due: money.meta({ description: 'total - credits_applied.' }),
  })
  .meta({
    id: 'UpcomingInvoice',
    description:
      'The invoice the next billing run would create for the running period, with the usage counted so far. ' +
      'Once the period has ended and no event changes, the run creates exactly this invoice.',
    examples: [
      {
        object: 'upcoming_invoice',
        subscription_id: 7,
        customer_id: 12,
        period_start: '2026-11-01T00:00:00.000Z',
        period_end: '2026-12-01T00:00:00.000Z',
        invoice_date: '2026-12-01',
        as_of: '2026-11-27T22:00:00.500Z',
        currency: 'CAD',
        lines: [
          {
            description: 'Pro plan',
            subscription_item_id: 41,
            product_id: 2,
            quantity: '1.0000',
            unit_price: '49.00000000',
            amount: '49.00000000',
          },
        ],
        subtotal: '49.00000000',
        tax_type: 'GST_QST',
        tax: '7.34000000',
        total: '56.34000000',
        credits_applied: '20.00000000',
        amount_due: '36.34000000',
      },
    ],
  });
export type UpcomingInvoice = z.output<typeof UpcomingInvoice>;
