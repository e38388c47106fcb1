import { z } from 'zod';
import { dateTime, integerId, money, storableText, uuid } from './primitives.js';
import { UsageEventWithStatus } from './usage-read-back.js';

export const CREDIT_NOTE_REASONS = [
  'duplicate',
  'fraudulent',
  'order_change',
  'product_unsatisfactory',
  'usage_correction',
  'other',
] as const;
export type CreditNoteReason = (typeof CREDIT_NOTE_REASONS)[number];

export const CreditNoteLine = z
  .object({
    invoice_item_id: integerId,
    description: z.string().meta({ description: "The credited invoice line's description." }),
    amount: money.meta({ description: 'Credited before tax.' }),
    tax_amount: money.meta({
      description: "This line's share of the note's tax (largest remainder: the lines sum to `tax`).",
    }),
  })
  .meta({ id: 'CreditNoteLine' });

export const CreditNoteTaxLine = z
  .object({
    name: z.string().meta({ description: 'GST, HST, QST, PST or STATE_SALES_TAX.' }),
    jurisdiction: z.string().nullable(),
    rate: z
      .string()
      .nullable()
      .meta({ description: 'The rate reversed; null when shared out of the invoice tax.' }),
    amount: money,
  })
  .meta({ id: 'CreditNoteTaxLine' });

export const CreditNote = z
  .object({
    id: uuid,
    object: z.literal('credit_note'),
    number: z.string().meta({ description: 'CN-000001, gapless per organization.', examples: ['CN-000001'] }),
    invoice_id: uuid,
    customer_id: integerId,
    currency: z.string(),
    reason: z.enum(CREDIT_NOTE_REASONS),
    memo: z.string().nullable(),
    lines: z.array(CreditNoteLine),
    subtotal: money.meta({ description: 'Sum of the lines before tax.' }),
    tax: money.meta({ description: "The invoice's tax reversed per component on `subtotal`." }),
    tax_lines: z.array(CreditNoteTaxLine).meta({ description: 'The tax by component; sums to `tax`.' }),
    total: money.meta({ description: 'subtotal + tax = applied_to_invoice + credited_to_customer.' }),
    applied_to_invoice: money.meta({
      description: 'A CREDIT_MEMO on the invoice, up to its balance when the note was made.',
    }),
    credited_to_customer: money.meta({
      description: 'The rest (already paid): a promotional credit grant named after the note.',
    }),
    credit_grant_id: uuid.nullable().meta({ description: 'The grant of `credited_to_customer`, if any.' }),
    usage_event_id: uuid
      .nullable()
      .meta({ description: 'The voided usage event a `usage_correction` note corrects, if any.' }),
    created_at: dateTime,
  })
  .meta({ id: 'CreditNote' });
export type CreditNote = z.output<typeof CreditNote>;

/** A decimal amount sent as a string (or a whole JSON number), kept as exact text. */
const amountText = z
  .union([z.string(), z.number().refine(Number.isSafeInteger, 'Send a decimal as a string ("25.50").')])
  .transform((value) => (typeof value === 'number' ? String(value) : value.trim()))
  .pipe(
    z
      .string()
      .regex(/^\d{1,12}(\.\d{1,8})?$/, 'Must be a decimal with at most 12 integer and 8 fractional digits.'),
  );

export const CreateCreditNote = z
  .strictObject({
    reason: z.enum(CREDIT_NOTE_REASONS),
    lines: z
      .array(
        z.strictObject({
          invoice_item_id: integerId.meta({ description: 'An item (`items[].id`) of this invoice.' }),
          amount: amountText.meta({
            description:
              "Before tax, greater than zero, in whole minor units of the invoice's currency; with earlier notes, " +
              "at most the line's `line_total_pre_tax`.",
            examples: ['10.00'],
          }),
        }),
      )
      .min(1)
      .max(100),
    memo: storableText.max(1000).optional(),
  })
  .meta({ id: 'CreateCreditNote' });
export type CreateCreditNote = z.input<typeof CreateCreditNote>;

export const VoidUsageEventRequest = z
  .strictObject({
    correction: z
      .enum(['credit_note'])
      .optional()
      .meta({
        description:
          '`credit_note`: the event belongs to a posted period; void it and issue a `usage_correction` credit note ' +
          'for exactly what it added to its invoice line.',
      }),
  })
  .meta({ id: 'VoidUsageEventRequest' });
export type VoidUsageEventRequest = z.output<typeof VoidUsageEventRequest>;

export const VoidedUsageEvent = UsageEventWithStatus.extend({
  credit_note_id: uuid
    .nullable()
    .optional()
    .meta({
      description:
        'With `correction: "credit_note"`: the correcting credit note; null when the event cost nothing (within ' +
        'included units, a flat fee).',
    }),
}).meta({ id: 'VoidedUsageEvent' });
