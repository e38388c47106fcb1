import { z } from 'zod';
import { dateTime, storable, storableText, UNSTORABLE_MESSAGE, uuid } from './primitives.js';

/** Every event name a webhook endpoint may subscribe to (spec "Event types"). */
export const EVENT_TYPES = [
  'invoice.posted',
  'invoice.paid',
  'invoice.created',
  'invoice.overdue',
  'invoice.payment_failed',
  'subscription.created',
  'subscription.canceled',
  'subscription.updated',
  'subscription.activated',
  'order.created',
  'order.completed',
  'payment.succeeded',
  'payment.failed',
  'customer.created',
  'customer.updated',
  'credit_grant.created',
  'credit_grant.depleted',
  'credit_grant.expired',
  'alert.triggered',
  'alert.resolved',
  'credit_note.created',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The events current flows emit; the others are reserved (valid targets, not yet sent). */
export const EMITTED_EVENT_TYPES = [
  'invoice.posted',
  'invoice.paid',
  'invoice.created',
  'subscription.created',
  'subscription.canceled',
  'subscription.updated',
  'payment.succeeded',
  'credit_grant.created',
  'credit_grant.depleted',
  'credit_grant.expired',
  'alert.triggered',
  'alert.resolved',
  'credit_note.created',
] as const satisfies readonly EventType[];
export type EmittedEventType = (typeof EMITTED_EVENT_TYPES)[number];

export const EVENT_WILDCARDS = [
  'invoice.*',
  'subscription.*',
  'order.*',
  'payment.*',
  'customer.*',
  'credit_grant.*',
  'alert.*',
  'credit_note.*',
] as const;

export const eventSelector = z
  .enum([...EVENT_TYPES, ...EVENT_WILDCARDS])
  .meta({ description: 'An event name, or a family wildcard such as `invoice.*`.' });

export const WEBHOOK_ENDPOINT_STATUSES = ['ACTIVE', 'DISABLED'] as const;
export const WEBHOOK_EVENT_STATUSES = ['PENDING', 'SUCCESS', 'FAILED', 'RETRYING'] as const;
export type WebhookEventStatus = (typeof WEBHOOK_EVENT_STATUSES)[number];

export const WebhookEndpoint = z
  .object({
    id: uuid,
    object: z.literal('webhook_endpoint'),
    url: z.string(),
    events: z.array(z.string()).meta({ description: 'Event names and family wildcards it receives.' }),
    status: z
      .enum(WEBHOOK_ENDPOINT_STATUSES)
      .meta({ description: 'DISABLED endpoints receive nothing; their pending deliveries end as FAILED.' }),
    description: z.string(),
    secret_key_id: z.string().meta({
      description:
        'Names the current signing secret without revealing it: `key_` + the first 16 hex digits of the SHA-256 of the secret. Each attempt records the key ids that signed it.',
    }),
    previous_secret_key_id: z.string().nullable().meta({
      description: 'After a rotation, the key id of the previous secret while it still signs; else null.',
    }),
    previous_secret_expires_at: dateTime.nullable().meta({
      description:
        'Until then, webhook-signature also carries a signature made with the previous secret; null when there is none.',
    }),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'PublicWebhookEndpoint' });
export type WebhookEndpoint = z.output<typeof WebhookEndpoint>;

/** Only the creation and rotation responses carry the signing secret. */
export const CreatedWebhookEndpoint = WebhookEndpoint.extend({
  secret: z.string().meta({
    description:
      'Signing secret: `whsec_` + 32 random bytes in standard base64, as Standard Webhooks libraries take it. Shown once.',
  }),
}).meta({ id: 'PublicWebhookEndpointWithSecret' });
export type CreatedWebhookEndpoint = z.output<typeof CreatedWebhookEndpoint>;

const endpointUrl = z
  .url({ protocol: /^https?$/, error: 'Must be an absolute https URL.' })
  .max(2048)
  .refine(storable, UNSTORABLE_MESSAGE)
  .meta({
    description:
      'HTTPS URL that receives the POSTs, stored in its WHATWG-normalized form. `http://localhost[:port]` and `http://127.0.0.1[:port]` (any loopback address) are accepted where the service allows them (development and test).',
  });
const endpointEvents = z.array(eventSelector).min(1).max(50);

export const CreateWebhookEndpoint = z
  .strictObject({
    url: endpointUrl,
    events: endpointEvents,
    description: storableText.max(500).default(''),
    status: z.enum(WEBHOOK_ENDPOINT_STATUSES).default('ACTIVE'),
  })
  .meta({ id: 'CreateWebhookEndpointRequest' });
export type CreateWebhookEndpoint = z.output<typeof CreateWebhookEndpoint>;

export const UpdateWebhookEndpoint = z
  .strictObject({
    url: endpointUrl.optional(),
    events: endpointEvents.optional(),
    description: storableText.max(500).optional(),
    status: z.enum(WEBHOOK_ENDPOINT_STATUSES).optional(),
  })
  .meta({ id: 'UpdateWebhookEndpointRequest' });
export type UpdateWebhookEndpoint = z.output<typeof UpdateWebhookEndpoint>;

export const MAX_EXPIRE_PREVIOUS_SECONDS = 7 * 24 * 3600;
export const DEFAULT_EXPIRE_PREVIOUS_SECONDS = 24 * 3600;

export const RotateWebhookSecret = z
  .strictObject({
    expire_previous_in: z
      .number()
      .int()
      .min(0)
      .max(MAX_EXPIRE_PREVIOUS_SECONDS)
      .default(DEFAULT_EXPIRE_PREVIOUS_SECONDS)
      .meta({
        description:
          'Seconds the previous secret keeps signing (webhook-signature), 0 to 604800; default 86400. 0 forgets it at once.',
      }),
  })
  .meta({ id: 'RotateWebhookSecretRequest' });
export type RotateWebhookSecret = z.output<typeof RotateWebhookSecret>;

export const RecoverWebhookEvents = z
  .strictObject({
    since: z.iso
      .datetime({ offset: true, error: 'Must be an ISO 8601 date-time with a time zone (Z or ±hh:mm).' })
      // a malformed value is reported once, by the format check
      .refine((value) => !(Date.parse(value) > Date.now()), {
        message: 'Must not be in the future.',
        params: { code: 'out_of_range' },
      })
      // Postgres has no year 0000
      .refine((value) => !value.startsWith('0000'), {
        message: 'Must be from year 0001 on.',
        params: { code: 'out_of_range' },
      })
      .meta({
        description: 'Every FAILED event of the endpoint created at or after this instant is sent again.',
      }),
  })
  .meta({ id: 'RecoverWebhookEventsRequest' });
export type RecoverWebhookEvents = z.output<typeof RecoverWebhookEvents>;

export const WebhookRecovery = z
  .object({
    queued: z.number().int().min(0).meta({
      description:
        'FAILED events that got a new series of attempts now; events already queued again by an earlier call are not counted twice.',
    }),
  })
  .meta({ id: 'PublicWebhookRecovery' });
export type WebhookRecovery = z.output<typeof WebhookRecovery>;

export const WebhookAttemptSignatures = z
  .object({
    x_service_signature: z.string().meta({ description: 'Key id of the secret behind X-Service-Signature.' }),
    webhook_signature: z
      .array(z.string())
      .meta({ description: 'Key ids of the secrets behind webhook-signature, in header order.' }),
  })
  .meta({
    id: 'PublicWebhookAttemptSignatures',
    description:
      "Which secrets signed this attempt, by key id (the endpoint's secret_key_id), never the secrets; null for attempts made before signatures were recorded.",
  });

export const WebhookAttempt = z
  .object({
    attempt: z.number().int(),
    at: dateTime.meta({
      description: 'When the attempt started; webhook-timestamp is this instant in Unix seconds.',
    }),
    response_code: z.number().int().meta({ description: '408 for a timeout, 0 for a connection error.' }),
    duration_ms: z.number().int(),
    signatures: WebhookAttemptSignatures.nullable(),
  })
  .meta({ id: 'PublicWebhookAttempt' });

export const WebhookEvent = z
  .object({
    id: uuid,
    object: z.literal('webhook_event'),
    endpoint_id: uuid,
    event_type: z.string(),
    status: z.enum(WEBHOOK_EVENT_STATUSES),
    payload: z.record(z.string(), z.unknown()).meta({
      description:
        'The JSON body sent (and signed): `id` (this event), `type`, `created` (Unix seconds) and `data`.',
    }),
    attempts: z.number().int(),
    max_attempts: z.number().int(),
    next_attempt_at: dateTime
      .nullable()
      .meta({ description: 'When the next attempt is due; null once it succeeded or failed for good.' }),
    last_attempt_at: dateTime.nullable(),
    last_response_code: z.number().int().nullable(),
    last_response_body: z
      .string()
      .nullable()
      .meta({ description: 'Last 1000 characters of the response body.' }),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'PublicWebhookEvent' });
export type WebhookEvent = z.output<typeof WebhookEvent>;

export const WebhookEventWithHistory = WebhookEvent.extend({
  attempt_history: z.array(WebhookAttempt),
}).meta({ id: 'PublicWebhookEventWithHistory' });
export type WebhookEventWithHistory = z.output<typeof WebhookEventWithHistory>;
