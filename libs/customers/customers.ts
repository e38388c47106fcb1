import type { Queryable } from '../db/index.js';
import { ApiError, type FieldError } from '../errors/index.js';
import { listTotal, readPage } from '../list-pages/index.js';
import {
  type CreateCustomer,
  type Customer,
  type PaginationQuery,
  parseIntegerId,
} from '../schemas/index.js';

const COLUMNS = `c.id, c.name, c.contact_name, c.email, c.phone, c.address_line1, c.address_line2, c.city,
  c.state_province, c.postal_code, c.country, c.tax_exempt, c.tax_id, c.credit_balance, c.auto_pay_enabled,
  c.created_at, c.updated_at`;

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

/** Postgres text cannot hold U+0000; refuse it by field rather than fail the insert. */
function assertStorableText(input: CreateCustomer): void {
  const invalid: FieldError[] = [];
  for (const [field, value] of Object.entries(input)) {
    if (typeof value === 'string' && value.includes('\u0000')) {
      invalid.push({ field, message: 'Must not contain NUL characters.', code: 'invalid_value' });
    }
  }
  if (invalid.length) throw ApiError.validation(invalid);
}

/** `notes` is stored for the console and never part of the public representation. */
export async function createCustomer(db: Queryable, orgId: number, input: CreateCustomer): Promise<Customer> {
  assertStorableText(input);
  const { rows } = await db.query<CustomerRow>(
    `INSERT INTO customers AS c (org_id, name, contact_name, email, phone, address_line1, address_line2, city,
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

/** A text id that is not a positive integer is simply not found (docs/decisions.md). */
export async function getCustomer(
  db: Queryable,
  orgId: number,
  customerId: number | string,
): Promise<Customer> {
  const id = parseIntegerId(customerId);
  const { rows } =
    id === undefined
      ? { rows: [] }
      : await db.query<CustomerRow>(`SELECT ${COLUMNS} FROM customers c WHERE c.org_id = $1 AND c.id = $2`, [
          orgId,
          id,
        ]);
  if (!rows[0]) throw ApiError.notFound(`Customer ${customerId}`);
  return toCustomer(rows[0]);
}

/** Newest first (see libs/list-pages for how a page is read). */
export async function listCustomers(
  db: Queryable,
  orgId: number,
  page: PaginationQuery,
): Promise<{ data: Customer[]; total: number }> {
  const { rows, total } = await readPage<CustomerRow>(
    db,
    {
      table: 'customers',
      alias: 'c',
      columns: COLUMNS,
      where: 'org_id = $1',
      values: [orgId],
      total: () => listTotal(db, { orgId, list: 'customers' }),
    },
    page,
  );
  return { data: rows.map(toCustomer), total: await total };
}
