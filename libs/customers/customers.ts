import { Batcher } from '../batching/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError, type FieldError } from '../errors/index.js';
import { listTotal, readPage } from '../list-pages/index.js';
import { regionProblem } from '../regions/index.js';
import {
  type CreateCustomer,
  type Customer,
  type PaginationQuery,
  parseIntegerId,
  storable,
  UNSTORABLE_MESSAGE,
  UpdateCustomer,
} from '../schemas/index.js';

/**
 * `credit_balance` is what the customer's credit grants can pay now: the remainders of its ACTIVE
 * grants that are effective and not expired (libs/billing/credits keeps them), in the organization's
 * currency as `available` of GET /customers/{id}/credit-balance is (a credit note's grant in another
 * currency is not added to it). "Now" is the statement's instant, not the transaction's start: a
 * grant made effective "now" by another transaction that committed while this one ran (a repeat of
 * the same reference waits for it) is effective to this read.
 */
export const CREDIT_BALANCE_SQL = `(SELECT coalesce(sum(g.remaining), 0) FROM credit_grants g
   WHERE g.org_id = c.org_id AND g.customer_id = c.id AND g.status = 'ACTIVE' AND g.effective_at <= statement_timestamp()
     AND (g.expires_at IS NULL OR g.expires_at > statement_timestamp())
     AND g.currency = (SELECT o.default_currency FROM organizations o WHERE o.id = c.org_id))::numeric(20, 8)`;

const COLUMNS = `c.id, c.name, c.contact_name, c.email, c.phone, c.address_line1, c.address_line2, c.city,
  c.state_province, c.postal_code, c.country, c.tax_exempt, c.tax_id, ${CREDIT_BALANCE_SQL} AS credit_balance,
  c.auto_pay_enabled, c.created_at, c.updated_at`;

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

/** Text Postgres cannot store as sent (U+0000, a lone surrogate) is refused by field, not mangled or failed. */
function assertStorableText(input: CreateCustomer | UpdateCustomer): void {
  const invalid: FieldError[] = [];
  for (const [field, value] of Object.entries(input)) {
    if (typeof value === 'string' && !storable(value)) {
      invalid.push({ field, message: UNSTORABLE_MESSAGE, code: 'invalid_value' });
    }
  }
  if (invalid.length) throw ApiError.validation(invalid);
}

/**
 * A region given in a country taxed by region (Canada, the US) must be one the tax table knows
 * ("ZZ" would be taxed at a guess); a region left out is allowed, as the spec has it optional,
 * but a subscription needs one (docs/decisions.md "A customer's region is one the tax table knows").
 */
function assertKnownRegion(country: string, stateProvince: string | null | undefined): void {
  const problem = regionProblem(country, stateProvince, { required: false });
  if (problem) throw ApiError.validation([{ field: 'state_province', ...problem }]);
}

/** `notes` is stored for the console and never part of the public representation. */
export async function createCustomer(db: Queryable, orgId: number, input: CreateCustomer): Promise<Customer> {
  assertStorableText(input);
  assertKnownRegion(input.country, input.state_province);
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

/**
 * Changes the fields given in `input` (parsed by UpdateCustomer) and leaves the others as they
 * are; `null` empties a field that may be empty. Found by id, or only within `orgId`. With no
 * field given, the customer is returned unchanged.
 */
export async function updateCustomer(
  db: Queryable,
  ref: { customerId: number; orgId?: number | undefined },
  input: UpdateCustomer,
): Promise<Customer> {
  assertStorableText(input);
  if (input.country !== undefined || input.state_province !== undefined) {
    // the region is checked against the country the customer will have: one of them may be kept
    const kept =
      input.country === undefined || input.state_province === undefined
        ? await db.query<{ country: string; state_province: string | null }>(
            'SELECT country, state_province FROM customers c WHERE c.id = $1 AND ($2::bigint IS NULL OR c.org_id = $2)',
            [ref.customerId, ref.orgId ?? null],
          )
        : undefined;
    const current = kept?.rows[0];
    if (kept && !current) throw ApiError.notFound(`Customer ${ref.customerId}`);
    assertKnownRegion(
      input.country ?? current!.country,
      input.state_province === undefined ? current!.state_province : input.state_province,
    );
  }
  // each field of UpdateCustomer is the column of its name; nothing else reaches the SQL
  const changes = Object.keys(UpdateCustomer.shape)
    .map((column) => [column, input[column as keyof UpdateCustomer]] as const)
    .filter(([, value]) => value !== undefined);
  const assignments = changes.map(([column], i) => `${column} = $${i + 3}`);
  const { rows } = changes.length
    ? await db.query<CustomerRow>(
        `UPDATE customers AS c SET ${assignments.join(', ')}, updated_at = now()
          WHERE c.id = $1 AND ($2::bigint IS NULL OR c.org_id = $2)
          RETURNING ${COLUMNS}`,
        [ref.customerId, ref.orgId ?? null, ...changes.map(([, value]) => value)],
      )
    : await db.query<CustomerRow>(
        `SELECT ${COLUMNS} FROM customers c WHERE c.id = $1 AND ($2::bigint IS NULL OR c.org_id = $2)`,
        [ref.customerId, ref.orgId ?? null],
      );
  if (!rows[0]) throw ApiError.notFound(`Customer ${ref.customerId}`);
  return toCustomer(rows[0]);
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

/**
 * Reads of one customer by id, as getCustomer, except that every read of one turn of the event
 * loop goes to Postgres as ONE query: under load, the round trip (and the system calls and
 * context switches on both sides) is shared by all the requests that arrived together. For the
 * pool only; a transaction reads with getCustomer.
 */
export class CustomerReader {
  private readonly reads: Batcher<{ orgId: number; id: number }, CustomerRow | undefined>;

  constructor(private readonly db: Queryable) {
    this.reads = new Batcher((keys) => this.readMany(keys), { lingerMs: 0, maxWeight: 500 });
  }

  async get(orgId: number, customerId: number | string): Promise<Customer> {
    const id = parseIntegerId(customerId);
    const row = id === undefined ? undefined : await this.reads.submit({ orgId, id });
    if (!row) throw ApiError.notFound(`Customer ${customerId}`);
    return toCustomer(row);
  }

  private async readMany(keys: { orgId: number; id: number }[]): Promise<(CustomerRow | undefined)[]> {
    // Each key's own org: a batch mixes organizations, and a row answers only its own key.
    const { rows } = await this.db.query<CustomerRow & { n: number }>(
      `SELECT k.n, ${COLUMNS}
         FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS k (org_id, id, n)
         JOIN customers c ON c.org_id = k.org_id AND c.id = k.id`,
      [keys.map((key) => key.orgId), keys.map((key) => key.id)],
    );
    const found: (CustomerRow | undefined)[] = new Array(keys.length).fill(undefined);
    for (const { n, ...row } of rows) found[n - 1] = row;
    return found;
  }
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
