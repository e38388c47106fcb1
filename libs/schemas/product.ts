import { z } from 'zod';
import { dateTime, integerId, money } from './primitives.js';

export const PRODUCT_CATEGORIES = ['software', 'service', 'usage', 'hardware', 'support', 'other'] as const;
export const PRODUCT_TYPES = ['standard', 'bundle'] as const;
export const PRICING_TYPES = ['one_time', 'recurring', 'usage'] as const;
export const PRICING_MODELS = ['flat_fee', 'per_unit'] as const;
export const PRICING_SCHEMES = ['linear', 'tiered'] as const;
export const PRICING_MODES = ['flat', 'volume', 'graduated'] as const;
export const BILLING_PERIODS = ['monthly', 'quarterly', 'annually'] as const;
export type BillingPeriod = (typeof BILLING_PERIODS)[number];

export const Product = z
  .object({
    id: integerId,
    object: z.literal('product'),
    name: z.string(),
    sku: z.string(),
    description: z.string(),
    unit_price: money,
    currency: z.string(),
    unit_label: z.string(),
    category: z.enum(PRODUCT_CATEGORIES),
    product_type: z.enum(PRODUCT_TYPES),
    pricing_type: z.enum(PRICING_TYPES),
    pricing_model: z.enum(PRICING_MODELS),
    pricing_scheme: z.enum(PRICING_SCHEMES),
    pricing_mode: z
      .enum(PRICING_MODES)
      .nullable()
      .meta({ description: 'null unless pricing_scheme is tiered.' }),
    default_billing_period: z.enum(BILLING_PERIODS),
    external_id: z.string(),
    is_active: z.boolean(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'PublicProduct' });
export type Product = z.output<typeof Product>;
