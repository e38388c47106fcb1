import { z } from 'zod';
import { countryCode, dateTime, integerId, money } from './primitives.js';

export const Customer = z
  .object({
    id: integerId,
    object: z.literal('customer'),
    name: z.string(),
    contact_name: z.string().nullable(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    address_line1: z.string().nullable(),
    address_line2: z.string().nullable(),
    city: z.string().nullable(),
    state_province: z.string().nullable(),
    postal_code: z.string().nullable(),
    country: z.string(),
    tax_exempt: z.boolean(),
    tax_id: z.string().nullable(),
    credit_balance: money,
    auto_pay_enabled: z.boolean(),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'PublicCustomer' });
export type Customer = z.output<typeof Customer>;

const optionalText = (max: number) => z.string().max(max).nullish();

/** Unknown fields are rejected by name, so a typo never silently drops data. */
export const CreateCustomer = z
  .strictObject({
    name: z.string().min(1).max(255),
    email: z.email().max(320).nullish(),
    contact_name: optionalText(255),
    phone: optionalText(50),
    address_line1: optionalText(255),
    address_line2: optionalText(255),
    city: optionalText(100),
    state_province: optionalText(50),
    postal_code: optionalText(20),
    country: countryCode.default('CA'),
    tax_exempt: z.boolean().default(false),
    tax_id: optionalText(100),
    notes: z.string().nullish().meta({
      description: 'Internal notes: stored, never returned. No length rule: the body limit bounds it.',
    }),
  })
  .meta({ id: 'CreateCustomerRequest' });
export type CreateCustomer = z.output<typeof CreateCustomer>;
