import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { readPage } from '../list-pages/index.js';
import { BILLABLE_CURRENCIES } from '../money/index.js';
import { PLANS, type Plan, requestsPerHour } from '../rate-limit/index.js';
import { currencyCode, type PaginationQuery } from '../schemas/index.js';

export interface Organization {
  id: number;
  name: string;
  plan: Plan;
  rate_limit_override: number | null;
  requests_per_hour: number;
  payment_terms_days: number;
  default_currency: string;
  /**
   * Hours a period's invoice stays a DRAFT after the period ends (late usage re-rates it) before it
   * is posted; 0 posts it at once (docs/decisions.md "Grace drafts").
   */
  invoice_grace_hours: number;
  created_at: string;
}

/** The largest grace period: 30 days. */
export const MAX_INVOICE_GRACE_HOURS = 720;

const COLUMNS =
  'id, name, plan, rate_limit_override, payment_terms_days, default_currency, invoice_grace_hours, created_at';

type Row = Omit<Organization, 'requests_per_hour' | 'created_at'> & { created_at: Date };

function present(row: Row): Organization {
  return {
    ...row,
    requests_per_hour: requestsPerHour(row.plan, row.rate_limit_override),
    created_at: row.created_at.toISOString(),
  };
}

function assertPlan(plan: string): asserts plan is Plan {
  if (!(PLANS as string[]).includes(plan)) {
    throw ApiError.validation([
      { field: 'plan', message: `Must be one of ${PLANS.join(', ')}.`, code: 'invalid_value' },
    ]);
  }
}

export async function createOrganization(
  db: Queryable,
  input: { name: string; plan?: string; paymentTermsDays?: number; currency?: string; country?: string },
): Promise<Organization> {
  const plan = input.plan ?? 'beta';
  assertPlan(plan);
  const currency = input.currency ?? 'CAD';
  if (!currencyCode.safeParse(currency).success) {
    throw ApiError.validation([
      {
        field: 'currency',
        message: `Must be a currency with a known minor unit: ${BILLABLE_CURRENCIES.join(', ')}.`,
        code: 'invalid_value',
      },
    ]);
  }
  if (!input.name || input.name.length > 255) {
    throw ApiError.validation([
      { field: 'name', message: 'Must be 1-255 characters.', code: 'invalid_value' },
    ]);
  }
  const { rows } = await db.query<Row>(
    `INSERT INTO organizations (name, plan, payment_terms_days, default_currency, country)
     VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [input.name, plan, input.paymentTermsDays ?? 30, currency, input.country ?? 'CA'],
  );
  return present(rows[0]!);
}

export async function getOrganization(db: Queryable, orgId: number): Promise<Organization> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM organizations WHERE id = $1`, [orgId]);
  if (!rows[0]) throw ApiError.notFound(`Organization ${orgId}`);
  return present(rows[0]);
}

/**
 * Newest first, for operators (see libs/list-pages for how a page is read). Organizations are
 * few (one per tenant): the total is a count.
 */
export async function listOrganizations(
  db: Queryable,
  page: PaginationQuery,
): Promise<{ data: Organization[]; total: number }> {
  const { rows, total } = await readPage<Row>(
    db,
    {
      table: 'organizations',
      alias: 'o',
      columns: COLUMNS,
      where: 'true',
      values: [],
      scope: 'all',
    },
    page,
  );
  return { data: rows.map(present), total: await total };
}

export async function setPlan(db: Queryable, orgId: number, plan: string): Promise<Organization> {
  assertPlan(plan);
  const { rows } = await db.query<Row>(
    `UPDATE organizations SET plan = $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [orgId, plan],
  );
  if (!rows[0]) throw ApiError.notFound(`Organization ${orgId}`);
  return present(rows[0]);
}

/** `null` removes the override, so the plan's limit applies again. */
export async function setRateLimitOverride(
  db: Queryable,
  orgId: number,
  requestsPerHour: number | null,
): Promise<Organization> {
  if (requestsPerHour !== null && (!Number.isInteger(requestsPerHour) || requestsPerHour <= 0)) {
    throw ApiError.validation([
      { field: 'requests_per_hour', message: 'Must be a positive integer.', code: 'invalid_value' },
    ]);
  }
  const { rows } = await db.query<Row>(
    `UPDATE organizations SET rate_limit_override = $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    [orgId, requestsPerHour],
  );
  if (!rows[0]) throw ApiError.notFound(`Organization ${orgId}`);
  return present(rows[0]);
}

/** Settings of an organization an operator changes (`org set`); those not given stay. */
export async function setOrganizationSettings(
  db: Queryable,
  orgId: number,
  settings: { invoiceGraceHours?: number | undefined },
): Promise<Organization> {
  const hours = settings.invoiceGraceHours;
  if (hours !== undefined && !(Number.isInteger(hours) && hours >= 0 && hours <= MAX_INVOICE_GRACE_HOURS)) {
    throw ApiError.validation([
      {
        field: 'invoice_grace_hours',
        message: `Must be a whole number of hours from 0 to ${MAX_INVOICE_GRACE_HOURS}.`,
        code: 'out_of_range',
      },
    ]);
  }
  const { rows } = await db.query<Row>(
    `UPDATE organizations SET invoice_grace_hours = coalesce($2, invoice_grace_hours), updated_at = now()
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [orgId, hours ?? null],
  );
  if (!rows[0]) throw ApiError.notFound(`Organization ${orgId}`);
  return present(rows[0]);
}
