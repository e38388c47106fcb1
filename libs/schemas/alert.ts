import { z } from 'zod';
import { dateTime, decimal8, integerId, storableText, uuid } from './primitives.js';

export const ALERT_METRICS = ['usage_quantity', 'usage_amount', 'credit_balance'] as const;
export type AlertMetric = (typeof ALERT_METRICS)[number];
export const ALERT_STATUSES = ['OK', 'TRIGGERED'] as const;
export type AlertStatus = (typeof ALERT_STATUSES)[number];

export const Alert = z
  .object({
    id: uuid,
    object: z.literal('alert'),
    customer_id: integerId,
    subscription_id: integerId,
    subscription_item_id: integerId.nullable().meta({ description: 'The item of a usage_quantity alert.' }),
    metric: z.enum(ALERT_METRICS).meta({
      description:
        "`usage_quantity`: the item's period quantity reaches `threshold`; `usage_amount`: the subscription's " +
        "period total_amount (before tax) reaches it; `credit_balance`: the customer's `projected` falls below it.",
    }),
    threshold: decimal8,
    name: z.string(),
    status: z.enum(ALERT_STATUSES),
    value: decimal8
      .nullable()
      .meta({ description: 'The metric at the last evaluation; null before the first.' }),
    triggered_at: dateTime.nullable(),
    created_at: dateTime,
  })
  .meta({ id: 'Alert' });
export type Alert = z.output<typeof Alert>;

const decimalText = z
  .union([z.string(), z.number().refine(Number.isSafeInteger, 'Send a decimal as a string ("25.50").')])
  .transform((value) => (typeof value === 'number' ? String(value) : value.trim()))
  .pipe(
    z
      .string()
      .regex(
        /^-?\d{1,30}(\.\d{1,8})?$/,
        'Must be a decimal with at most 30 integer and 8 fractional digits.',
      ),
  );

export const CreateAlert = z
  .strictObject({
    // .int() is the safe-integer range in zod 4: a max of its own would report the same twice.
    subscription_id: integerId,
    metric: z.enum(ALERT_METRICS),
    subscription_item_id: integerId
      .optional()
      .meta({ description: 'Required for usage_quantity: a metered item of the subscription.' }),
    threshold: decimalText.meta({
      description:
        'Greater than zero (credit_balance: zero or more); usage_amount and credit_balance in money.',
      examples: ['100.00'],
    }),
    name: storableText.max(255).optional(),
  })
  .meta({ id: 'CreateAlert' });
export type CreateAlert = z.input<typeof CreateAlert>;
