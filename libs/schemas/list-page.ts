import type { PaginationQuery } from './pagination.js';

/**
 * The list total a page already proves, so the count query can be skipped: a page that is
 * neither full nor past the end is the last one. Undefined when only a count can tell.
 */
export function totalImpliedByPage(page: PaginationQuery, rowsOnPage: number): number | undefined {
  if (rowsOnPage > 0 && rowsOnPage < page.limit) return page.offset + rowsOnPage;
  if (rowsOnPage === 0 && page.offset === 0) return 0;
  return undefined;
}
