import { z } from 'zod';

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;

/** `limit` 1-100 (default 25), `offset` >= 0 (default 0); out of range is a 422. */
export const paginationQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .default(DEFAULT_LIMIT)
    .meta({ description: 'Page size, 1-100.' }),
  offset: z.coerce
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .default(0)
    .meta({ description: 'Rows to skip, >= 0.' }),
});
export type PaginationQuery = z.output<typeof paginationQuery>;

export const Pagination = z
  .object({
    limit: z.number().int(),
    offset: z.number().int(),
    total: z.number().int(),
    has_more: z.boolean(),
  })
  .meta({ id: 'Pagination' });
export type Pagination = z.output<typeof Pagination>;

/** `has_more` is true exactly when offset + limit < total. */
export function paginationOf(query: PaginationQuery, total: number): Pagination {
  return { limit: query.limit, offset: query.offset, total, has_more: query.offset + query.limit < total };
}

export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), pagination: Pagination });
}

export function single<T extends z.ZodType>(item: T) {
  return z.object({ data: item });
}

/** `?active=true|false` style boolean query parameters. */
export const booleanQuery = z.enum(['true', 'false']).transform((value) => value === 'true');
