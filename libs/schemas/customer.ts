import { z } from 'zod';
import { countryCode, dateTime, integerId, money } from './primitives.js';
import { updateInputOf } from './update-input.js';

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

/**
 * The HTML5 e-mail rule (what a browser's `<input type=email>` takes, so `a&b@` and `user%x@` are
 * valid), with at most 64 characters before the @ (RFC 5321's limit on a local part). A malformed
 * address stops there, so it is one `details` entry and not a second one for its length.
 */
const HTML5_EMAIL_WITH_SHORT_LOCAL_PART =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;
const email = z.email({ pattern: HTML5_EMAIL_WITH_SHORT_LOCAL_PART, abort: true }).max(320);

/** Unknown fields are rejected by name, so a typo never silently drops data. */
export const CreateCustomer = z
  .strictObject({
    name: z.string().min(1).max(255),
    email: email.nullish(),
    contact_name: optionalText(255),
    phone: optionalText(50),
    address_line1: optionalText(255),
    address_line2: optionalText(255),
    city: optionalText(100),
    state_province: optionalText(50).meta({
      description:
        'In CA and the US, where sales tax depends on it: a province, territory or state the tax table knows, as a code (ON, NY), a name or a common abbreviation; anything else is a 422. Optional, but a customer needs it to be subscribed (unless tax-exempt).',
    }),
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

/** What `customer update` may change: the fields of CreateCustomer, each optional, none defaulted. */
export const UpdateCustomer = updateInputOf(CreateCustomer);
export type UpdateCustomer = z.output<typeof UpdateCustomer>;
