import { z } from 'zod';
import { listProducts } from '../../catalog/index.js';
import { priceTiersByProduct } from '../read-models/price-tiers.js';
import { defineTool, toolLimit } from './tool.js';

export const listProductsTool = defineTool({
  name: 'list_products',
  title: 'Product catalog',
  description:
    'Products newest first with their pricing: unit price and currency, pricing type (one_time, recurring, ' +
    'usage), model, scheme and, for tiered products, the tiers in ascending order (up_to null = no upper bound).',
  input: z.strictObject({
    active: z.boolean().optional().describe('true: only active products; false: only inactive ones.'),
    limit: toolLimit,
  }),
  async run({ active, limit }, { db, orgId }) {
    const { data, total } = await listProducts(db, orgId, { active }, { limit, offset: 0 });
    const tiers = await priceTiersByProduct(
      db,
      orgId,
      data.filter((p) => p.pricing_scheme === 'tiered').map((p) => p.id),
    );
    return {
      total,
      returned: data.length,
      products: data.map((product) => ({
        id: product.id,
        name: product.name,
        sku: product.sku,
        category: product.category,
        is_active: product.is_active,
        pricing_type: product.pricing_type,
        pricing_model: product.pricing_model,
        pricing_scheme: product.pricing_scheme,
        pricing_mode: product.pricing_mode,
        unit_price: product.unit_price,
        currency: product.currency,
        unit_label: product.unit_label,
        default_billing_period: product.default_billing_period,
        ...(product.pricing_scheme === 'tiered' ? { tiers: tiers.get(product.id) ?? [] } : {}),
      })),
    };
  },
});
