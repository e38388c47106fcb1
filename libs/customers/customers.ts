import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import type { CreateCustomer, Customer, PaginationQuery } from '../schemas/index.js';

const COLUMNS = `id, name, contact_name, email, phone, address_line1, address_line2, city, state_province,
  postal_code, country, tax_exempt, tax_id, credit_balance, auto_pay_enabled, created_at, updated_at`;

type CustomerRow = Omit<Customer, 'object' | 'created_at' | 'updated_at'> & {
  created_at: Date;
  updated_at: Date;
};

function toCustomer(row: CustomerRow): Customer {
  return {
    object: 'customer',
    ...row,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export async function createCustomer(db: Queryable, orgId: number, input: CreateCustomer): Promise<Customer> {
  const { rows } = await db.query<CustomerRow>(
    `INSERT INTO customers (org_id, name, contact_name, email, phone, address_line1, address_line2, city,
       state_province, postal_code, country, tax_exempt, tax_id, notes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     RETURNING ${COLUMNS}`,
    [
      orgId,
      input.name,
      input.contact_name ?? null,
      input.email ?? null,
      input.phone ?? null,
      input.address_line1 ?? null,
      input.address_line2 ?? null,
      input.city ?? null,
      input.state_province ?? null,
      input.postal_code ?? null,
      input.country,
      input.tax_exempt,
      input.tax_id ?? null,
      input.notes ?? null,
    ],
  );
  return toCustomer(rows[0]!);
}

export async function getCustomer(db: Queryable, orgId: number, customerId: number): Promise<Customer> {
  const { rows } = await db.query<CustomerRow>(
    `SELECT ${COLUMNS} FROM customers WHERE org_id = $1 AND id = $2`,
    [orgId, customerId],
  );
  if (!rows[0]) throw ApiError.notFound(`Customer ${customerId}`);
  return toCustomer(rows[0]);
}

export async function listCustomers(
  db: Queryable,
  orgId: number,
  page: PaginationQuery,
): Promise<{ data: Customer[]; total: number }> {
  const [list, count] = await Promise.all([
    db.query<CustomerRow>(
      `SELECT ${COLUMNS} FROM customers WHERE org_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
      [orgId, page.limit, page.offset],
    ),
    db.query<{ total: number }>('SELECT count(*) AS total FROM customers WHERE org_id = $1', [orgId]),
  ]);
  return { data: list.rows.map(toCustomer), total: count.rows[0]!.total };
}
