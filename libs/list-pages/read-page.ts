import type { Queryable } from '../db/index.js';
import type { PaginationQuery } from '../schemas/index.js';
import { orderBy, planPage, totalImpliedByPage } from './page-plan.js';

/** Up to this offset, rows are read straight from the list index rather than by id. */
const DIRECT_READ_MAX_OFFSET = 500;

/**
 * A newest-first list of one organization: `table` (with `org_id`, `id`, `created_at` and an
 * index on (org_id, <filter columns>, created_at DESC, id DESC), or the `tieBreaker` in place of
 * id), `where` over its own columns
 * with `values` as $1..$n where $1 is the organization, the full row's `columns` under `alias`,
 * and how to get the number of rows `where` selects (default: a count, for short lists and lists
 * whose filters are too many to keep totals of).
 */
export interface ListSource {
  table: string;
  alias: string;
  columns: string;
  where: string;
  values: unknown[];
  total?: () => Promise<number>;
  /**
   * The instant the list is sorted by, newest first, then id or the tieBreaker (default:
   * created_at); among `columns` too (the oldest-first read re-sorts the page by it).
   */
  sortedBy?: string;
  /**
   * What orders the rows of one instant, highest first, instead of id: a column unique within the
   * list (so pages neither skip nor repeat a row), among `columns` too, and last in the list index
   * in place of id (credit notes: their number, as number_seq).
   */
  tieBreaker?: string;
  /**
   * `all`: a list of every organization's rows (an operator's), with no `org_id`; `$1` is then
   * the first filter's value. Default: one organization's.
   */
  scope?: 'organization' | 'all';
}

/**
 * One page and the list's total. Once the total is known the page is read from the nearer end
 * of the list (planPage). The first page needs no total first, and a short last page implies
 * it; the total is returned as a promise so the caller can fetch the page's children meanwhile.
 */
export async function readPage<Row>(
  db: Queryable,
  source: ListSource,
  page: PaginationQuery,
): Promise<{ rows: Row[]; total: Promise<number> }> {
  const { table, alias, columns, where, values } = source;
  const readTotal =
    source.total ??
    (async () =>
      (await db.query<{ total: number }>(`SELECT count(*) AS total FROM ${table} WHERE ${where}`, values))
        .rows[0]!.total);
  const sortedBy = source.sortedBy ?? 'created_at';
  const tieBreaker = source.tieBreaker ?? 'id';
  const sameOrganization = source.scope === 'all' ? '' : ` AND ${alias}.org_id = $1`;
  const known = page.offset > 0 ? await readTotal() : undefined;
  const plan = planPage(page, known);
  if (plan.direction === 'none') return { rows: [], total: Promise.resolve(known ?? 0) };

  // Near an end of the list the rows are read straight from the list index (few heap pages:
  // neighbours in the list were written together); further in, the ids come from an index-only
  // scan and only the page's rows are read in full, so skipped entries never touch the heap.
  const limitOffset = `LIMIT $${values.length + 1} OFFSET $${values.length + 2}`;
  const direct = `SELECT ${columns} FROM ${table} ${alias} WHERE ${where} ORDER BY ${orderBy(plan, alias, sortedBy, tieBreaker)} ${limitOffset}`;
  const pageSql =
    plan.offset > DIRECT_READ_MAX_OFFSET
      ? `SELECT ${columns}
           FROM (SELECT id AS page_id FROM ${table} WHERE ${where}
                  ORDER BY ${orderBy(plan, '', sortedBy, tieBreaker)} ${limitOffset}) page
           JOIN ${table} ${alias} ON ${alias}.id = page.page_id${sameOrganization}
          ORDER BY ${alias}.${sortedBy} DESC, ${alias}.${tieBreaker} DESC`
      : plan.direction === 'oldest-first'
        ? `SELECT * FROM (${direct}) page ORDER BY ${sortedBy} DESC, ${tieBreaker} DESC`
        : direct;
  const { rows } = await db.query<Row & object>(pageSql, [...values, plan.limit, plan.offset]);
  if (known !== undefined) return { rows, total: Promise.resolve(known) };
  const implied = totalImpliedByPage(page, rows.length);
  return { rows, total: implied === undefined ? readTotal() : Promise.resolve(implied) };
}
