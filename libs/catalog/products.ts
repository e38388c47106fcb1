import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import type { PaginationQuery, Product } from '../schemas/index.js';

const COLUMNS = `id, name, sku, description, unit_price, currency, unit_label, category, product_type, pricing_type,
  pricing_model, pricing_scheme, pricing_mode, default_billing_period, external_id, is_active, metadata,
  created_at, updated_at`;

type ProductRow = Omit<Product, 'object' | 'created_at' | 'updated_at'> & {
  created_at: Date;
  updated_at: Date;
};

function toProduct(row: ProductRow): Product {
  return {
    object: 'product',
    ...row,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export async function getProduct(db: Queryable, orgId: number, productId: number): Promise<Product> {
  const { rows } = await db.query<ProductRow>(
    `SELECT ${COLUMNS} FROM products WHERE org_id = $1 AND id = $2`,
    [orgId, productId],
  );
  if (!rows[0]) throw ApiError.notFound(`Product ${productId}`);
  return toProduct(rows[0]);
}

export interface ProductFilter {
  active?: boolean | undefined;
}

export async function listProducts(
  db: Queryable,
  orgId: number,
  filter: ProductFilter,
  page: PaginationQuery,
): Promise<{ data: Product[]; total: number }> {
  const where = filter.active === undefined ? 'org_id = $1' : 'org_id = $1 AND is_active = $2';
  const values: unknown[] = filter.active === undefined ? [orgId] : [orgId, filter.active];
  const [list, count] = await Promise.all([
    db.query<ProductRow>(
      `SELECT ${COLUMNS} FROM products WHERE ${where} ORDER BY created_at DESC, id DESC
        LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      [...values, page.limit, page.offset],
    ),
    db.query<{ total: number }>(`SELECT count(*) AS total FROM products WHERE ${where}`, values),
  ]);
  return { data: list.rows.map(toProduct), total: count.rows[0]!.total };
}
