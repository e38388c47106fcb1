import type { Queryable } from '../../db/index.js';
import { eventTimesWithin } from '../domain/event-times.js';

/**
 * Usage totals for billing and MCP: the sum of quantities per subscription item over the window
 * [from, to) of event timestamps. Implementations return exact decimal strings with 8 fractional
 * digits, and the same string for the same events: Postgres in the embedded mode, ClickHouse in
 * the distributed one. A voided event counts nowhere. A window may reach past when events can
 * happen (its bounds are derived: a period's end, the day after a date a client gave); each
 * implementation queries only eventTimesWithin it.
 */
export interface UsageAggregator {
  /** Every requested item is in the result; an item without usage totals '0.00000000'. */
  totals(
    orgId: number,
    subscriptionItemIds: readonly number[],
    from: Date,
    to: Date,
  ): Promise<Map<number, string>>;
  /**
   * Per UTC day and item, the days of [from, to) that have usage (the caller fills the zero days);
   * `from` and `to` are UTC midnights.
   */
  daily(orgId: number, subscriptionItemIds: readonly number[], from: Date, to: Date): Promise<DailyUsage[]>;
}

export interface DailyUsage {
  /** YYYY-MM-DD (UTC). */
  date: string;
  subscription_item_id: number;
  /** Decimal text, 8 fractional digits. */
  quantity: string;
}

export const ZERO_QUANTITY = '0.00000000';

/** SQL over `usage_events`, whose unique key already removed duplicates. */
export class PostgresUsageAggregator implements UsageAggregator {
  constructor(private readonly db: Queryable) {}

  async totals(
    orgId: number,
    subscriptionItemIds: readonly number[],
    from: Date,
    to: Date,
  ): Promise<Map<number, string>> {
    const result = new Map<number, string>(subscriptionItemIds.map((id) => [id, ZERO_QUANTITY]));
    const window = eventTimesWithin(from, to);
    if (subscriptionItemIds.length === 0 || !window) return result;
    const { rows } = await this.db.query<{ item: number; total: string }>(
      `SELECT subscription_item_id AS item, sum(quantity)::numeric(38, 8)::text AS total
         FROM usage_events
        WHERE org_id = $1 AND subscription_item_id = ANY($2::bigint[]) AND occurred_at >= $3 AND occurred_at < $4
          AND voided_at IS NULL
        GROUP BY subscription_item_id`,
      [orgId, subscriptionItemIds, new Date(window.fromMs), new Date(window.toMs)],
    );
    for (const row of rows) result.set(row.item, row.total);
    return result;
  }

  async daily(
    orgId: number,
    subscriptionItemIds: readonly number[],
    from: Date,
    to: Date,
  ): Promise<DailyUsage[]> {
    const window = eventTimesWithin(from, to);
    if (subscriptionItemIds.length === 0 || !window) return [];
    const { rows } = await this.db.query<DailyUsage>(
      `SELECT to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date,
              subscription_item_id::int AS subscription_item_id,
              sum(quantity)::numeric(38, 8)::text AS quantity
         FROM usage_events
        WHERE org_id = $1 AND subscription_item_id = ANY($2::bigint[]) AND occurred_at >= $3 AND occurred_at < $4
          AND voided_at IS NULL
        GROUP BY 1, 2`,
      [orgId, subscriptionItemIds, new Date(window.fromMs), new Date(window.toMs)],
    );
    return rows.map((row) => ({ ...row, subscription_item_id: Number(row.subscription_item_id) }));
  }
}

const DAY_MS = 86_400_000;

/** The partial days at a window's ends ($5-$6 and $7-$8), from the events themselves. */
const EDGES = `
  UNION ALL
  SELECT subscription_item_id, quantity FROM usage_events
   WHERE org_id = $1 AND subscription_item_id = ANY($2::bigint[]) AND voided_at IS NULL
     AND ((occurred_at >= $5 AND occurred_at < $6) OR (occurred_at >= $7 AND occurred_at < $8))`;

/**
 * Totals from Postgres' daily totals (usage_daily_totals, kept exact by the statements that insert
 * and void events): a period costs one row per item and day instead of one per event. The whole
 * UTC days of [from, to) come from the daily totals, the partial days at either end from the
 * events themselves; the answer is the same string PostgresUsageAggregator gives.
 */
export class PostgresDailyTotalsAggregator implements UsageAggregator {
  constructor(private readonly db: Queryable) {}

  async totals(
    orgId: number,
    subscriptionItemIds: readonly number[],
    from: Date,
    to: Date,
  ): Promise<Map<number, string>> {
    const result = new Map<number, string>(subscriptionItemIds.map((id) => [id, ZERO_QUANTITY]));
    const window = eventTimesWithin(from, to);
    if (subscriptionItemIds.length === 0 || !window) return result;
    const start = new Date(window.fromMs);
    const end = new Date(window.toMs);
    const firstDay = Math.ceil(window.fromMs / DAY_MS) * DAY_MS;
    const endDay = Math.floor(window.toMs / DAY_MS) * DAY_MS;
    // no whole day inside: the events alone
    const whole = firstDay < endDay;
    const head = [start, whole ? new Date(firstDay) : end];
    const tail = whole ? [new Date(endDay), end] : [end, end];
    const edges = head[0]! < head[1]! || tail[0]! < tail[1]!;
    // a window of whole days (periods start at midnight) reads the daily totals alone
    const { rows } = await this.db.query<{ item: number; total: string }>(
      `SELECT item, sum(quantity)::numeric(38, 8)::text AS total FROM (
         SELECT subscription_item_id AS item, quantity FROM usage_daily_totals
          WHERE org_id = $1 AND subscription_item_id = ANY($2::bigint[]) AND day >= $3::date AND day < $4::date
         ${edges ? EDGES : ''}
       ) AS parts GROUP BY item`,
      edges
        ? [orgId, subscriptionItemIds, isoDay(firstDay), isoDay(whole ? endDay : firstDay), ...head, ...tail]
        : [orgId, subscriptionItemIds, isoDay(firstDay), isoDay(endDay)],
    );
    for (const row of rows) result.set(Number(row.item), row.total);
    return result;
  }

  async daily(
    orgId: number,
    subscriptionItemIds: readonly number[],
    from: Date,
    to: Date,
  ): Promise<DailyUsage[]> {
    const window = eventTimesWithin(from, to);
    if (subscriptionItemIds.length === 0 || !window) return [];
    const { rows } = await this.db.query<DailyUsage>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS date, subscription_item_id::int AS subscription_item_id,
              quantity::numeric(38, 8)::text AS quantity
         FROM usage_daily_totals
        WHERE org_id = $1 AND subscription_item_id = ANY($2::bigint[]) AND day >= $3::date AND day < $4::date`,
      [orgId, subscriptionItemIds, isoDay(window.fromMs), isoDay(window.toMs)],
    );
    return rows.map((row) => ({ ...row, subscription_item_id: Number(row.subscription_item_id) }));
  }
}

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
