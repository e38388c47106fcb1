import { z } from 'zod';
import { dateTime, integerId, money, storableText, uuid } from './primitives.js';

export const CREDIT_GRANT_STATUSES = ['PENDING', 'ACTIVE', 'DEPLETED', 'EXPIRED', 'VOIDED'] as const;
export type CreditGrantStatus = (typeof CREDIT_GRANT_STATUSES)[number];
export const CREDIT_GRANT_CATEGORIES = ['paid', 'promotional'] as const;
export const CREDIT_GRANT_APPLIES_TO = ['all', 'usage'] as const;
export const CREDIT_LEDGER_TYPES = ['grant', 'use', 'expiry', 'void'] as const;

export const CreditGrant = z
  .object({
    id: uuid,
    object: z.literal('credit_grant'),
    customer_id: integerId,
    name: z.string(),
    category: z.enum(CREDIT_GRANT_CATEGORIES).meta({
      description: '`paid` credits are sold (a Prepaid credits invoice); `promotional` ones are given.',
    }),
    currency: z.string().meta({ description: "The organization's default currency." }),
    amount: money,
    remaining: money.meta({
      description: 'What it can still pay. amount = used + expired + voided + remaining, always.',
    }),
    priority: z.number().int().meta({ description: '0..100; lower burns first.' }),
    applies_to: z.enum(CREDIT_GRANT_APPLIES_TO).meta({
      description: '`usage`: pays only metered lines and their tax.',
    }),
    effective_at: dateTime,
    expires_at: dateTime.nullable(),
    status: z.enum(CREDIT_GRANT_STATUSES).meta({
      description:
        'PENDING until its Prepaid credits invoice is paid (paid grants), ACTIVE while usable, DEPLETED when used ' +
        'up, EXPIRED at expires_at, VOIDED by a void.',
    }),
    invoice_id: uuid.nullable().meta({ description: 'The Prepaid credits invoice of a paid grant.' }),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'CreditGrant' });
export type CreditGrant = z.output<typeof CreditGrant>;

export const CreditLedgerEntry = z
  .object({
    type: z.enum(CREDIT_LEDGER_TYPES),
    amount: money.meta({ description: 'Positive; `type` says the direction.' }),
    invoice_id: uuid.nullable(),
    remaining_after: money,
    created_at: dateTime,
  })
  .meta({ id: 'CreditLedgerEntry' });
export type CreditLedgerEntry = z.output<typeof CreditLedgerEntry>;

export const CreditGrantWithLedger = CreditGrant.extend({
  ledger: z.array(CreditLedgerEntry).meta({ description: 'Every movement of the grant, oldest first.' }),
}).meta({ id: 'CreditGrantWithLedger' });
export type CreditGrantWithLedger = z.output<typeof CreditGrantWithLedger>;

/** A decimal amount sent as a string (or a whole JSON number), kept as exact text. */
const amountText = z
  .union([z.string(), z.number().refine(Number.isSafeInteger, 'Send a decimal as a string ("25.50").')])
  .transform((value) => (typeof value === 'number' ? String(value) : value.trim()))
  .pipe(
    z
      .string()
      .regex(/^\d{1,12}(\.\d{1,8})?$/, 'Must be a decimal with at most 12 integer and 8 fractional digits.'),
  );

const instant = z.iso
  .datetime({ offset: true, error: 'Must be an ISO 8601 date-time with a time zone (Z or ±hh:mm).' })
  .refine((value) => !value.startsWith('0000'), {
    message: 'Must be from year 0001 on.',
    params: { code: 'out_of_range' },
  })
  .meta({ description: 'ISO 8601 date-time.' });

export const CreateCreditGrant = z
  .strictObject({
    amount: amountText.meta({
      description: "Greater than zero, in whole minor units of the organization's currency.",
      examples: ['100.00'],
    }),
    category: z.enum(CREDIT_GRANT_CATEGORIES),
    name: storableText.min(1).max(255).optional(),
    priority: z.number().int().min(0).max(100).default(50),
    applies_to: z.enum(CREDIT_GRANT_APPLIES_TO).default('all'),
    effective_at: instant.optional().meta({ description: 'Default: now.' }),
    expires_at: instant.optional().meta({ description: 'After effective_at; default: never.' }),
    reference: storableText
      .min(1)
      .max(255)
      .optional()
      .meta({
        description:
          'Makes the call idempotent per customer: the same reference and amount answer the same grant (200); ' +
          'another amount is a 409.',
      }),
  })
  .meta({ id: 'CreateCreditGrant' });
export type CreateCreditGrant = z.input<typeof CreateCreditGrant>;

export const CreditGrantListQuery = z.object({
  status: z.enum(CREDIT_GRANT_STATUSES).optional(),
});

export const CreditBalance = z
  .object({
    object: z.literal('credit_balance'),
    customer_id: integerId,
    currency: z.string(),
    available: money.meta({ description: 'The remainders of the ACTIVE grants usable now.' }),
    pending: money.meta({
      description:
        "The totals of the customer's upcoming invoices (GET /subscriptions/{id}/upcoming-invoice).",
    }),
    projected: money.meta({ description: 'available - pending; negative when usage outruns the credits.' }),
    as_of: dateTime.meta({ description: 'Usage counted in `pending` is complete up to this instant.' }),
    next_expiry: z
      .object({ amount: money, expires_at: dateTime })
      .nullable()
      .meta({ description: 'The remainder of the grant(s) expiring soonest; null when none expires.' }),
  })
  .meta({ id: 'CreditBalance' });
export type CreditBalance = z.output<typeof CreditBalance>;

export const CreditTopUpRequest = z
  .strictObject({
    enabled: z.boolean(),
    threshold: amountText.meta({ description: 'When `projected` falls below it, a paid grant is made.' }),
    target: amountText.meta({ description: 'The grant brings `projected` back to it; above `threshold`.' }),
  })
  .meta({ id: 'CreditTopUpRequest' });

export const CreditTopUp = z
  .object({
    object: z.literal('credit_top_up'),
    customer_id: integerId,
    enabled: z.boolean(),
    threshold: money,
    target: money,
    updated_at: dateTime.nullable(),
  })
  .meta({ id: 'CreditTopUp' });
export type CreditTopUp = z.output<typeof CreditTopUp>;
