import { z } from 'zod';
import { ErrorBody } from './error.js';
import { CreateUsageEvent, idempotencyKey, UsageEvent } from './usage-event.js';

/** Beyond the spec: how a high-volume sender stays within its hourly request limit. */
export const MAX_USAGE_BATCH_EVENTS = 1000;

export const CreateUsageEventBatch = z
  .strictObject({
    events: z
      .array(
        CreateUsageEvent.extend({
          idempotency_key: idempotencyKey.meta({ description: "This event's own idempotency key." }),
        }),
      )
      .min(1)
      .max(MAX_USAGE_BATCH_EVENTS)
      .meta({
        description:
          'Up to 1000 events. Each one is checked and recorded on its own, with its own idempotency key; ' +
          'an invalid event does not fail the others.',
      }),
  })
  .meta({ id: 'CreateUsageEventBatchRequest' });

/** The envelope only: the events are validated one by one, each with its own result. */
export const UsageEventBatchEnvelope = z.strictObject({
  events: z.array(z.unknown()).min(1).max(MAX_USAGE_BATCH_EVENTS),
});

export const UsageEventBatchItemResult = z
  .object({
    status: z.number().int().meta({
      description:
        'The status this event alone would have got: 201 when recorded (or already recorded), else 4xx.',
    }),
    data: UsageEvent.optional().meta({ description: 'The stored event, when status is 201.' }),
    error: ErrorBody.optional().meta({ description: 'The error body, when status is not 201.' }),
  })
  .meta({ id: 'UsageEventBatchItemResult' });
export type UsageEventBatchItemResult = z.output<typeof UsageEventBatchItemResult>;

export const UsageEventBatchResult = z
  .object({
    data: z.array(UsageEventBatchItemResult).meta({ description: 'One result per event, in request order.' }),
  })
  .meta({ id: 'UsageEventBatchResult' });
export type UsageEventBatchResult = z.output<typeof UsageEventBatchResult>;
