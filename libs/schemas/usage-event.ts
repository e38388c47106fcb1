import { z } from 'zod';
import { dateTime, integerId, uuid } from './primitives.js';

export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** Usage quantities are stored exactly at 8 fractional digits; finer input is refused, not rounded. */
export const USAGE_QUANTITY_SCALE = 8;

export const UsageEvent = z
  .object({
    id: uuid,
    object: z.literal('usage_event'),
    subscription_item_id: integerId,
    quantity: z.number().positive(),
    timestamp: dateTime.meta({ description: 'When the usage happened.' }),
    idempotency_key: z.string(),
    recorded_at: dateTime.meta({ description: 'When the service recorded the event.' }),
  })
  .meta({ id: 'PublicUsageEvent' });
export type UsageEvent = z.output<typeof UsageEvent>;

/** 1 to 255 characters, counted as Postgres counts them (code points: an emoji is one). */
export const idempotencyKey = z
  .string()
  .min(1)
  .superRefine((value, context) => {
    if (value.length > MAX_IDEMPOTENCY_KEY_LENGTH && [...value].length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      context.addIssue({
        code: 'too_big',
        origin: 'string',
        maximum: MAX_IDEMPOTENCY_KEY_LENGTH,
        inclusive: true,
        input: value,
      });
    }
  })
  .meta({ maxLength: MAX_IDEMPOTENCY_KEY_LENGTH });

export const CreateUsageEvent = z
  .strictObject({
    // .int() is the safe-integer range in zod 4: a max of its own would report the same twice.
    subscription_item_id: z.number().int().positive(),
    quantity: z
      .number()
      .positive()
      .max(1e15)
      .refine((q) => fractionalDigits(q) <= USAGE_QUANTITY_SCALE, {
        message: `At most ${USAGE_QUANTITY_SCALE} fractional digits.`,
        params: { code: 'out_of_range' },
      }),
    timestamp: z.iso
      .datetime({ offset: true, error: 'Must be an ISO 8601 date-time with a time zone (Z or ±hh:mm).' })
      .optional()
      .meta({ description: 'Defaults to the time of receipt.' }),
    idempotency_key: idempotencyKey
      .optional()
      .meta({ description: 'Fallback when the Idempotency-Key header is absent.' }),
  })
  .meta({ id: 'CreateUsageEventRequest' });
export type CreateUsageEvent = z.output<typeof CreateUsageEvent>;

/** Fractional digits of the shortest decimal that round-trips to q (what the client sent). */
export function fractionalDigits(q: number): number {
  const [mantissa = '', exponent = '0'] = String(q).toLowerCase().split('e');
  const fraction = mantissa.split('.')[1] ?? '';
  return Math.max(0, fraction.length - Number(exponent));
}

/** The exact decimal text of a validated quantity, for NUMERIC columns and Decimal sums. */
export function quantityToDecimal(q: number): string {
  return q.toFixed(fractionalDigits(q));
}
