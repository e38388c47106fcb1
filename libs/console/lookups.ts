import { z } from 'zod';
import type { ConsoleConfig } from '../config/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { listOf, type PaginationQuery, paginationOf, paginationQuery } from '../schemas/index.js';

/**
 * `--limit` (1-100, default 25) and `--offset` (default 0) of list commands: the public API's
 * own query parameters, so a page means the same in both.
 */
export const pageFlags = paginationQuery.shape;

/** A page and its pagination, as every list prints it: `{ data, pagination }`. */
export function pageOf<T>(page: PaginationQuery, list: { data: T[]; total: number }) {
  return { data: list.data, pagination: paginationOf(page, list.total) };
}

/**
 * A page of public objects exactly as the public API's list route answers it: written through
 * the same `listOf(schema)`, so nothing the schema does not publish is printed.
 */
export function publicPage<T extends z.ZodType>(
  item: T,
  page: PaginationQuery,
  list: { data: z.output<T>[]; total: number },
) {
  return z.encode(listOf(item), pageOf(page, list));
}

const RECORDS = { customers: 'Customer', subscriptions: 'Subscription', invoices: 'Invoice' } as const;

/**
 * The organization a record belongs to: `orgId` when the operator gave `--org` (the domain's get
 * then finds only that organization's record), else the record's own. Show commands then read it
 * with the public API's get functions, which always take an organization.
 */
export async function organizationOf(
  db: Queryable,
  table: keyof typeof RECORDS,
  id: number | string,
  orgId: number | undefined,
): Promise<number> {
  if (orgId !== undefined) return orgId;
  const { rows } = await db.query<{ org_id: number }>(`SELECT org_id FROM ${table} WHERE id = $1`, [id]);
  if (!rows[0]) throw ApiError.notFound(`${RECORDS[table]} ${id}`);
  return rows[0].org_id;
}

/** The api's own origin as the console prints it: PUBLIC_BASE_URL, else the local default. */
export function apiOrigin(config: Pick<ConsoleConfig, 'PUBLIC_BASE_URL' | 'HOST' | 'PORT'>): string {
  return (config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.PORT}`).replace(/\/+$/, '');
}

/** Base of links to pages for people (hosted invoices), as the api makes them: PUBLIC_URL, else its own. */
export function pagesBaseUrl(
  config: Pick<ConsoleConfig, 'PUBLIC_URL' | 'PUBLIC_BASE_URL' | 'HOST' | 'PORT'>,
): string {
  return config.PUBLIC_URL?.replace(/\/+$/, '') ?? apiOrigin(config);
}
