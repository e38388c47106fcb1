import type { Queryable } from '../../db/index.js';

export interface PriceTier {
  /** Upper bound of the tier in units; null for the open-ended last tier. */
  up_to: string | null;
  unit_price: string;
  flat_fee: string;
}

/** Tiers of many products in one query, in ascending order. */
export async function priceTiersByProduct(
  db: Queryable,
  orgId: number,
  productIds: number[],
): Promise<Map<number, PriceTier[]>> {
  const grouped = new Map<number, PriceTier[]>(productIds.map((id) => [id, []]));
  if (productIds.length === 0) return grouped;
  const { rows } = await db.query<PriceTier & { product_id: number }>(
    `SELECT product_id, up_to, unit_price, flat_fee FROM product_price_tiers
      WHERE org_id = $1 AND product_id = ANY($2::bigint[])
      ORDER BY product_id, position`,
    [orgId, productIds],
  );
  for (const { product_id, ...tier } of rows) grouped.get(product_id)?.push(tier);
  return grouped;
}
