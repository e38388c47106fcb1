import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { readPage } from '../list-pages/index.js';
import { type PaginationQuery, type Product, parseIntegerId } from '../schemas/index.js';

const COLUMNS = `p.id, p.name, p.sku, p.description, p.unit_price, p.currency, p.unit_label, p.category,
  p.product_type, p.pricing_type, p.pricing_model, p.pricing_scheme, p.pricing_mode, p.default_billing_period,
  p.external_id, p.is_active, p.metadata, p.created_at, p.updated_at`;

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

/** A text id that is not a positive integer is simply not found (docs/decisions.md). */
export async function getProduct(db: Queryable, orgId: number, productId: number | string): Promise<Product> {
  const id = parseIntegerId(productId);
  const { rows } =
    id === undefined
      ? { rows: [] }
      : await db.query<ProductRow>(`SELECT ${COLUMNS} FROM products p WHERE p.org_id = $1 AND p.id = $2`, [
          orgId,
          id,
        ]);
  if (!rows[0]) throw ApiError.notFound(`Product ${productId}`);
  return toProduct(rows[0]);
}

export interface ProductFilter {
  active?: boolean | undefined;
}

/** Newest first (see libs/list-pages for how a page is read). */
export async function listProducts(
  db: Queryable,
  orgId: number,
  filter: ProductFilter,
  page: PaginationQuery,
): Promise<{ data: Product[]; total: number }> {
  const where = filter.active === undefined ? 'org_id = $1' : 'org_id = $1 AND is_active = $2';
  const values: unknown[] = filter.active === undefined ? [orgId] : [orgId, filter.active];
  const { rows, total } = await readPage<ProductRow>(
    db,
    {
      table: 'products',
      alias: 'p',
      columns: COLUMNS,
      where,
      values,
    },
    page,
  );
  return { data: rows.map(toProduct), total: await total };
}
