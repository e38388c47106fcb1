import type { Queryable } from '../db/index.js';

interface InFlight {
  startedAt: number;
  total: Promise<number>;
}

/** Per database handle, the newest count in flight for each query. */
const inFlight = new WeakMap<Queryable, Map<string, InFlight>>();

/**
 * `SELECT count(*)` of a list, shared by the concurrent requests that need the same total.
 *
 * Counting a long list is the most expensive part of a page (an index scan of every row), and
 * under load many requests ask for the same total (every page of one list has the same one). A
 * caller joins a count already running only when that count STARTED AFTER `notBefore`, the time
 * the caller began: its snapshot then includes every write committed before the caller asked, so
 * the total is exactly what a count of its own would return (read-your-writes holds). Otherwise a
 * new count starts, which later callers may join. Nothing is cached once a count returns.
 *
 * `db` is the key too: a transaction's client never shares with the pool.
 */
export function sharedCount(
  db: Queryable,
  sql: string,
  values: unknown[],
  notBefore: number,
): Promise<number> {
  let counts = inFlight.get(db);
  if (!counts) {
    counts = new Map();
    inFlight.set(db, counts);
  }
  const key = `${sql}\u0000${JSON.stringify(values)}`;
  const running = counts.get(key);
  if (running && running.startedAt >= notBefore) return running.total;

  const entry: InFlight = {
    startedAt: performance.now(),
    total: db.query<{ total: number }>(sql, values).then((result) => Number(result.rows[0]!.total)),
  };
  counts.set(key, entry);
  const forget = () => {
    if (counts.get(key) === entry) counts.delete(key);
  };
  entry.total.then(forget, forget);
  return entry.total;
}
