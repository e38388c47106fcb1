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
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The events current flows emit; the others are reserved (valid targets, not yet sent). */
export const EMITTED_EVENT_TYPES = [
  'invoice.posted',
  'invoice.paid',
  'subscription.created',
  'subscription.canceled',
  'payment.succeeded',
] as const satisfies readonly EventType[];
export type EmittedEventType = (typeof EMITTED_EVENT_TYPES)[number];

export const EVENT_WILDCARDS = ['invoice.*', 'subscription.*', 'order.*', 'payment.*', 'customer.*'] as const;

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
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'PublicWebhookEndpoint' });
export type WebhookEndpoint = z.output<typeof WebhookEndpoint>;

/** Only the creation response carries the signing secret. */
export const CreatedWebhookEndpoint = WebhookEndpoint.extend({
  secret: z.string().meta({ description: 'Signing secret (whsec_...). Shown once.' }),
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

export const WebhookAttempt = z
  .object({
    attempt: z.number().int(),
    at: dateTime,
    response_code: z.number().int().meta({ description: '408 for a timeout, 0 for a connection error.' }),
    duration_ms: z.number().int(),
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
      .meta({ description: 'When the next attempt is due; null once settled.' }),
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
