import { z } from 'zod';

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;

const INTEGER = /^(-?)(\d+)$/;

/**
 * A whole number >= 0 from the query string, written in digits only. `z.coerce.number()` alone
 * would also read `1e1`, ` 0x10` and an empty value (as 0), and report a value past 2^53 twice;
 * the text is checked first, giving exactly one issue for a bad value (out of range for a
 * negative one), and only digits reach the coercion. No transform, so the document keeps the
 * default and shows the parameter as the integer it stands for.
 */
function digitsQuery(min: number, max: number, fallback: number) {
  return z
    .string()
    .superRefine((text, ctx) => {
      const match = INTEGER.exec(text);
      if (!match) {
        ctx.addIssue({
          code: 'invalid_format',
          format: 'integer',
          message: 'Must be a whole number, in digits.',
        });
        return;
      }
      // beyond 2^53 Number() rounds, but never below `max`: the range check still refuses it
      const value = Number(match[2]);
      if (match[1] || value < min) {
        ctx.addIssue({ code: 'too_small', origin: 'number', minimum: min, inclusive: true });
      } else if (value > max) {
        ctx.addIssue({ code: 'too_big', origin: 'number', maximum: max, inclusive: true });
      }
    })
    .pipe(z.coerce.number())
    .default(fallback)
    .meta({ type: 'integer', minimum: min, maximum: max });
}

/** `limit` 1-100 (default 25), `offset` >= 0 (default 0); malformed or out of range is a 422. */
export const paginationQuery = z.object({
  limit: digitsQuery(1, MAX_LIMIT, DEFAULT_LIMIT).meta({ description: 'Page size, 1-100.' }),
  offset: digitsQuery(0, Number.MAX_SAFE_INTEGER, 0).meta({ description: 'Rows to skip, >= 0.' }),
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
