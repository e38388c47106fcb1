import type { PaginationQuery } from '../schemas/index.js';

/**
 * How to read one page of a list sorted newest first (created_at DESC, id DESC, or another
 * instant column than created_at).
 *
 * OFFSET makes Postgres walk every skipped index entry, so a page near the end of a long list
 * costs as much as the whole list. When the total is known, a page past the middle is read from
 * the other end instead (oldest first, skipping only what lies behind it) and put back in order:
 * offset 99,900 of 100,000 then skips nothing.
 */
export type PagePlan =
  | { direction: 'newest-first'; limit: number; offset: number }
  | { direction: 'oldest-first'; limit: number; offset: number }
  | { direction: 'none' };

export function planPage(page: PaginationQuery, total: number | undefined): PagePlan {
  if (total === undefined) return { direction: 'newest-first', limit: page.limit, offset: page.offset };
  if (page.offset >= total) return { direction: 'none' };
  const end = Math.min(page.offset + page.limit, total);
  if (page.offset <= total - end)
    return { direction: 'newest-first', limit: page.limit, offset: page.offset };
  return { direction: 'oldest-first', limit: end - page.offset, offset: total - end };
}

/**
 * The list total a page already proves, so the count can be skipped: a page that is neither
 * full nor past the end is the last one. Undefined when only a count can tell.
 */
export function totalImpliedByPage(page: PaginationQuery, rowsOnPage: number): number | undefined {
  if (rowsOnPage > 0 && rowsOnPage < page.limit) return page.offset + rowsOnPage;
  if (rowsOnPage === 0 && page.offset === 0) return 0;
  return undefined;
}

/**
 * SQL for a plan's sort order, by `column` then `tieBreaker` (both directions are the same index
 * read forwards or backwards).
 */
export function orderBy(plan: PagePlan, alias = '', column = 'created_at', tieBreaker = 'id'): string {
  const prefix = alias ? `${alias}.` : '';
  return plan.direction === 'oldest-first'
    ? `${prefix}${column} ASC, ${prefix}${tieBreaker} ASC`
    : `${prefix}${column} DESC, ${prefix}${tieBreaker} DESC`;
}
