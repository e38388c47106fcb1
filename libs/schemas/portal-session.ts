import { z } from 'zod';
import { dateTime, integerId, uuid } from './primitives.js';

/** The languages pages and invoice documents are written in. */
export const LOCALES = ['en', 'fr-CA'] as const;

export const PortalSession = z
  .object({
    id: uuid,
    object: z.literal('portal_session'),
    customer_id: integerId,
    locale: z.enum(LOCALES).meta({ description: 'The language the portal opens in.' }),
    url: z.url().meta({
      description:
        "Opens the customer's read-only portal without an API key, until expires_at. Shown once: only a hash of its token is stored.",
    }),
    created_at: dateTime,
    expires_at: dateTime,
  })
  .meta({ id: 'PublicPortalSession' });
export type PortalSession = z.output<typeof PortalSession>;

/** Unknown fields are rejected by name, as on every body. */
export const CreatePortalSession = z
  .strictObject({
    customer_id: integerId.meta({
      description: "The customer whose portal the link opens (this organization's).",
    }),
    locale: z
      .enum(LOCALES)
      .optional()
      .meta({ description: 'Default: fr-CA for customers in Quebec, en for everyone else.' }),
    expires_in: z
      .number()
      .int()
      .min(60)
      .max(86_400)
      .default(3600)
      .meta({ description: 'Seconds until the link stops working (60 to 86400; default 3600).' }),
  })
  .meta({ id: 'CreatePortalSession' });
