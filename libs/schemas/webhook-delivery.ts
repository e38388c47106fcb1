import { z } from 'zod';
import { Alert } from './alert.js';
import { CreditGrant } from './credit-grant.js';
import { CreditNote } from './credit-note.js';
import { Invoice, InvoiceTransaction } from './invoice.js';
import { dateTime, integerId, uuid } from './primitives.js';
import { Subscription, SubscriptionItem } from './subscription.js';
import type { EmittedEventType } from './webhook.js';

/*
 * What a receiver gets: the body of each event type and the headers of every delivery. These
 * schemas type what the dispatcher sends and generate the OpenAPI document's `webhooks` section.
 */

export const InvoiceEventData = Invoice.pick({
  id: true,
  object: true,
  customer_id: true,
  status: true,
  invoice_number: true,
  total: true,
  balance: true,
  currency: true,
}).meta({ id: 'WebhookInvoiceData', description: 'The invoice as it stands after the change.' });
export type InvoiceEventData = z.output<typeof InvoiceEventData>;

export const SubscriptionEventData = Subscription.pick({
  id: true,
  object: true,
  customer_id: true,
  status: true,
}).meta({ id: 'WebhookSubscriptionData', description: 'The subscription as it stands after the change.' });
export type SubscriptionEventData = z.output<typeof SubscriptionEventData>;

export const SubscriptionUpdatedEventData = SubscriptionEventData.extend({
  previous_items: z.array(SubscriptionItem).meta({ description: 'The items before the change.' }),
  items: z.array(SubscriptionItem).meta({ description: 'The items after the change.' }),
  effective_at: dateTime.meta({ description: 'When the change took effect.' }),
}).meta({
  id: 'WebhookSubscriptionUpdatedData',
  description: 'The subscription after a change of its items, with the items before and after.',
});
export type SubscriptionUpdatedEventData = z.output<typeof SubscriptionUpdatedEventData>;

export const PaymentEventData = InvoiceTransaction.extend({ customer_id: integerId }).meta({
  id: 'WebhookPaymentData',
  description: 'The payment transaction, with the customer of its invoice.',
});
export type PaymentEventData = z.output<typeof PaymentEventData>;

function payloadOf<const T extends EmittedEventType, D extends z.ZodType>(
  type: T,
  data: D,
  id: string,
  description: string,
) {
  return z
    .object({
      id: uuid.meta({
        description:
          'This delivery: the webhook event id, also sent as webhook-id and X-Service-Delivery. The same on every attempt; deduplicate on it.',
      }),
      type: z.literal(type),
      created: z.number().int().meta({ description: 'When the change happened, Unix seconds.' }),
      data,
    })
    .meta({ id, description });
}

/** The body of each event type the service emits; reserved types have none yet. */
export const WEBHOOK_PAYLOADS = {
  'invoice.posted': payloadOf(
    'invoice.posted',
    InvoiceEventData,
    'WebhookInvoicePosted',
    'An invoice was issued.',
  ),
  'invoice.paid': payloadOf(
    'invoice.paid',
    InvoiceEventData,
    'WebhookInvoicePaid',
    'An invoice was paid in full.',
  ),
  'invoice.created': payloadOf(
    'invoice.created',
    InvoiceEventData,
    'WebhookInvoiceCreated',
    "A period's invoice was made as a DRAFT: the organization's grace period lets late usage re-rate it before it is posted.",
  ),
  'subscription.created': payloadOf(
    'subscription.created',
    SubscriptionEventData,
    'WebhookSubscriptionCreated',
    'A subscription was created.',
  ),
  'subscription.canceled': payloadOf(
    'subscription.canceled',
    SubscriptionEventData,
    'WebhookSubscriptionCanceled',
    'A subscription was canceled.',
  ),
  'subscription.updated': payloadOf(
    'subscription.updated',
    SubscriptionUpdatedEventData,
    'WebhookSubscriptionUpdated',
    'The items of a subscription changed (now, or at the end of a period as scheduled).',
  ),
  'payment.succeeded': payloadOf(
    'payment.succeeded',
    PaymentEventData,
    'WebhookPaymentSucceeded',
    'A payment was recorded against an invoice.',
  ),
  'credit_grant.created': payloadOf(
    'credit_grant.created',
    CreditGrant,
    'WebhookCreditGrantCreated',
    'A credit grant was made (PENDING for a paid grant until its invoice is paid, ACTIVE otherwise).',
  ),
  'credit_grant.depleted': payloadOf(
    'credit_grant.depleted',
    CreditGrant,
    'WebhookCreditGrantDepleted',
    'A credit grant was used up by the invoices it paid.',
  ),
  'credit_grant.expired': payloadOf(
    'credit_grant.expired',
    CreditGrant,
    'WebhookCreditGrantExpired',
    'A credit grant reached its expires_at; its remainder lapsed.',
  ),
  'alert.triggered': payloadOf(
    'alert.triggered',
    Alert,
    'WebhookAlertTriggered',
    'An alert crossed its threshold (once per crossing and period).',
  ),
  'alert.resolved': payloadOf(
    'alert.resolved',
    Alert,
    'WebhookAlertResolved',
    'A triggered alert went back (a void, a top-up, a change).',
  ),
  'credit_note.created': payloadOf(
    'credit_note.created',
    CreditNote,
    'WebhookCreditNoteCreated',
    'A credit note was issued against an invoice (a credit memo up to its balance, a credit grant for the rest).',
  ),
} satisfies Record<EmittedEventType, z.ZodObject>;

export const WEBHOOK_USER_AGENT = 'Service-Webhooks/1.0';

/**
 * The headers of every delivery attempt beside `Content-Type: application/json`: the spec's
 * X-Service-* and the Standard Webhooks ones (webhook-*), under the names receivers read them by.
 */
export const WebhookDeliveryHeaders = z.object({
  'user-agent': z.literal(WEBHOOK_USER_AGENT),
  'x-service-event': z.string().meta({ description: 'The event type, as `type` in the body.' }),
  'x-service-delivery': uuid.meta({ description: 'The webhook event id, as `id` in the body.' }),
  'x-service-signature': z
    .string()
    .regex(/^sha256=[0-9a-f]{64}$/)
    .meta({
      description:
        '`sha256=` + the hex HMAC-SHA256 of the raw body, keyed with the whole secret string (`whsec_...`, prefix included). The current secret only.',
    }),
  'webhook-id': uuid.meta({
    description: 'Standard Webhooks: the webhook event id, the same on every attempt.',
  }),
  'webhook-timestamp': z
    .string()
    .regex(/^\d+$/)
    .meta({ description: 'Standard Webhooks: Unix seconds of this attempt (each retry has its own).' }),
  'webhook-signature': z
    .string()
    .regex(/^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$/)
    .meta({
      description:
        'Standard Webhooks: `v1,` + the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the base64-decoded part of the secret after `whsec_`. During a secret rotation, a second space-separated signature made with the previous secret.',
    }),
});
export type WebhookDeliveryHeaders = z.output<typeof WebhookDeliveryHeaders>;
