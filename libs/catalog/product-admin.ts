import { z } from 'zod';
import {
  moneyInput,
  parseInput,
  productPriceProblems,
  quantityInput,
  tierProblems,
} from '../billing/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { isBillableCurrency } from '../money/index.js';
import {
  BILLING_PERIODS,
  currencyCode,
  PRICING_MODELS,
  PRICING_MODES,
  PRICING_SCHEMES,
  PRICING_TYPES,
  PRODUCT_CATEGORIES,
  PRODUCT_TYPES,
  type Product,
  updateInputOf,
} from '../schemas/index.js';
import { getProduct } from './products.js';

/**
 * Creating catalog products (a console operation; the public API only reads them). A tiered price
 * carries its tiers in ascending order, the last one open-ended (up_to null).
 */

export const NewPriceTier = z.strictObject({
  up_to: quantityInput.nullable(),
  unit_price: moneyInput.default('0'),
  flat_fee: moneyInput.default('0'),
});

/** A product's fields and their rules, before the rules that tie a price's fields together. */
const ProductFields = z.strictObject({
  name: z.string().min(1).max(255),
  unit_price: moneyInput.default('0'),
  pricing_type: z.enum(PRICING_TYPES),
  pricing_model: z.enum(PRICING_MODELS).default('per_unit'),
  /** Default: tiered when a mode or tiers are given, else linear. */
  pricing_scheme: z.enum(PRICING_SCHEMES).optional(),
  pricing_mode: z.enum(PRICING_MODES).optional(),
  tiers: z.array(NewPriceTier).max(50).optional(),
  /** Default: the organization's default currency. */
  currency: currencyCode.optional(),
  /** Default: usage for usage-priced products, software otherwise. */
  category: z.enum(PRODUCT_CATEGORIES).optional(),
  product_type: z.enum(PRODUCT_TYPES).default('standard'),
  default_billing_period: z.enum(BILLING_PERIODS).default('monthly'),
  sku: z.string().max(100).default(''),
  description: z.string().max(2000).default(''),
  unit_label: z.string().min(1).max(50).default('unit'),
  external_id: z.string().max(255).default(''),
  is_active: z.boolean().default(true),
  metadata: z.record(z.string(), z.unknown()).default({}),
});

export const NewProduct = ProductFields.superRefine((product, ctx) => {
  const tiered =
    (product.pricing_scheme ?? (product.pricing_mode || product.tiers ? 'tiered' : 'linear')) === 'tiered';
  if (!tiered) {
    if (product.pricing_mode) {
      ctx.addIssue({
        code: 'custom',
        path: ['pricing_mode'],
        message: 'Only a tiered price has a pricing mode.',
      });
    }
    if (product.tiers?.length) {
      ctx.addIssue({ code: 'custom', path: ['tiers'], message: 'Only a tiered price has tiers.' });
    }
    return;
  }
  if (!product.pricing_mode) {
    ctx.addIssue({
      code: 'custom',
      path: ['pricing_mode'],
      message: 'A tiered price needs a pricing mode: flat, volume or graduated.',
    });
  }
  for (const problem of tierProblems(product.tiers ?? [])) {
    ctx.addIssue({
      code: 'custom',
      path: problem.index < 0 ? ['tiers'] : ['tiers', problem.index, problem.field],
      message: problem.message,
    });
  }
});
export type NewProduct = z.input<typeof NewProduct>;

/**
 * What `product update` may change: what names and describes a product, and whether it is sold.
 * Never its price: subscriptions copied their unit price when created, but tiers are read at
 * billing time, so a changed price would silently rebill subscriptions already running.
 */
export const UpdateProduct = updateInputOf(
  ProductFields.pick({
    name: true,
    description: true,
    sku: true,
    unit_label: true,
    external_id: true,
    is_active: true,
  }),
);
export type UpdateProduct = z.input<typeof UpdateProduct>;

export type ProductWithTiers = Product & {
  tiers: { up_to: string | null; unit_price: string; flat_fee: string }[];
};

export async function createProduct(
  tx: Queryable,
  orgId: number,
  input: NewProduct,
): Promise<ProductWithTiers> {
  const product = parseInput(NewProduct, input);
  const tooLarge = productPriceProblems(product);
  if (tooLarge.length) throw ApiError.validation(tooLarge);
  const org = await tx.query<{ default_currency: string }>(
    'SELECT default_currency FROM organizations WHERE id = $1',
    [orgId],
  );
  if (!org.rows[0]) throw ApiError.notFound(`Organization ${orgId}`);
  const currency = product.currency ?? org.rows[0].default_currency.trim();
  if (!isBillableCurrency(currency)) {
    // an organization created before currencies were checked: its default cannot be billed
    throw ApiError.validation([
      {
        field: 'currency',
        message: `The organization's default currency ${currency} cannot be billed; give a currency with a known minor unit.`,
        code: 'required',
      },
    ]);
  }
  const tiered = product.pricing_mode !== undefined || (product.tiers?.length ?? 0) > 0;
  const { rows } = await tx.query<{ id: number }>(
    `INSERT INTO products (org_id, name, sku, description, unit_price, currency, unit_label, category, product_type,
       pricing_type, pricing_model, pricing_scheme, pricing_mode, default_billing_period, external_id, is_active,
       metadata)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
     RETURNING id`,
    [
      orgId,
      product.name,
      product.sku,
      product.description,
      product.unit_price,
      currency,
      product.unit_label,
      product.category ?? (product.pricing_type === 'usage' ? 'usage' : 'software'),
      product.product_type,
      product.pricing_type,
      product.pricing_model,
      tiered ? 'tiered' : 'linear',
      tiered ? product.pricing_mode : null,
      product.default_billing_period,
      product.external_id,
      product.is_active,
      JSON.stringify(product.metadata),
    ],
  );
  const id = rows[0]!.id;
  const tiers = (product.tiers ?? []).map((tier, position) => ({ ...tier, position }));
  if (tiers.length) {
    await tx.query(
      `INSERT INTO product_price_tiers (org_id, product_id, position, up_to, unit_price, flat_fee)
       SELECT $1, $2, position, up_to, unit_price, flat_fee
         FROM jsonb_to_recordset($3::jsonb) AS x(position integer, up_to numeric, unit_price numeric, flat_fee numeric)`,
      [orgId, id, JSON.stringify(tiers)],
    );
  }
  return { ...(await getProduct(tx, orgId, id)), tiers: await getPriceTiers(tx, orgId, id) };
}

/**
 * Changes the fields given (see UpdateProduct) and leaves the others, the price above all, as
 * they are. Found by id, or only within `orgId`. A deactivated product can no longer be put on a
 * new subscription; the subscriptions that have it go on billing it.
 */
export async function updateProduct(
  tx: Queryable,
  ref: { productId: number; orgId?: number | undefined },
  input: UpdateProduct,
): Promise<ProductWithTiers> {
  const product = parseInput(UpdateProduct, input);
  // each field of UpdateProduct is the column of its name; nothing else reaches the SQL
  const changes = Object.keys(UpdateProduct.shape)
    .map((column) => [column, product[column as keyof typeof product]] as const)
    .filter(([, value]) => value !== undefined);
  const assignments = [...changes.map(([column], i) => `${column} = $${i + 3}`), 'updated_at = now()'];
  const { rows } = await tx.query<{ id: number; org_id: number }>(
    changes.length
      ? `UPDATE products SET ${assignments.join(', ')}
          WHERE id = $1 AND ($2::bigint IS NULL OR org_id = $2) RETURNING id, org_id`
      : 'SELECT id, org_id FROM products WHERE id = $1 AND ($2::bigint IS NULL OR org_id = $2)',
    [ref.productId, ref.orgId ?? null, ...changes.map(([, value]) => value)],
  );
  const found = rows[0];
  if (!found) throw ApiError.notFound(`Product ${ref.productId}`);
  return {
    ...(await getProduct(tx, found.org_id, found.id)),
    tiers: await getPriceTiers(tx, found.org_id, found.id),
  };
}

/** A product's tiers in ascending order (empty for a linear price). */
export async function getPriceTiers(
  db: Queryable,
  orgId: number,
  productId: number,
): Promise<ProductWithTiers['tiers']> {
  const { rows } = await db.query<ProductWithTiers['tiers'][number]>(
    `SELECT up_to, unit_price, flat_fee FROM product_price_tiers WHERE org_id = $1 AND product_id = $2
      ORDER BY position`,
    [orgId, productId],
  );
  return rows;
}
