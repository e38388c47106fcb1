import type { ClickHouse } from '../../clickhouse/index.js';
import { eventTimesWithin } from '../domain/event-times.js';
import { type DailyUsage, type UsageAggregator, ZERO_QUANTITY } from './aggregator.js';
import { CLICKHOUSE_USAGE_TABLE } from './clickhouse-schema.js';

/**
 * Usage totals from ClickHouse: FINAL collapses the rows of one identity to the kept one before
 * summing, so the totals equal Postgres' for the same events. A voided event's kept row is its void
 * (clickhouse-schema.ts): sumIf leaves it out after the collapse, where a WHERE on `voided` could be
 * evaluated before it (PREWHERE) and bring the event's own row back. Every value inlined in the query is
 * an integer checked here (ClickHouse 18.16 has no query parameters).
 */
export class ClickHouseUsageAggregator implements UsageAggregator {
  private readonly table: string;

  constructor(private readonly clickhouse: ClickHouse) {
    this.table = `${clickhouse.database}.${CLICKHOUSE_USAGE_TABLE}`;
  }

  async totals(
    orgId: number,
    subscriptionItemIds: readonly number[],
    from: Date,
    to: Date,
  ): Promise<Map<number, string>> {
    const result = new Map<number, string>(subscriptionItemIds.map((id) => [id, ZERO_QUANTITY]));
    const window = eventTimesWithin(from, to);
    if (subscriptionItemIds.length === 0 || !window) return result;
    const items = subscriptionItemIds.map(integer).join(', ');
    const fromMs = integer(window.fromMs);
    const toMs = integer(window.toMs);
    // The DateTime bounds prune partitions; the millisecond bounds make [from, to) exact.
    const rows = await this.clickhouse.rows<{ item: string; total: string }>(
      `SELECT subscription_item_id AS item, toString(sumIf(quantity, voided = 0)) AS total
         FROM ${this.table} FINAL
        WHERE org_id = ${integer(orgId)}
          AND subscription_item_id IN (${items})
          AND occurred_at >= toDateTime(${Math.floor(fromMs / 1000)}, 'UTC')
          AND occurred_at <= toDateTime(${Math.floor(toMs / 1000)}, 'UTC')
          AND toUInt64(occurred_at) * 1000 + occurred_ms >= ${fromMs}
          AND toUInt64(occurred_at) * 1000 + occurred_ms < ${toMs}
        GROUP BY subscription_item_id`,
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
    const items = subscriptionItemIds.map(integer).join(', ');
    // Day bounds are whole seconds (UTC midnights): the DateTime column is exact for them.
    const fromS = Math.floor(integer(window.fromMs) / 1000);
    const toS = Math.floor(integer(window.toMs) / 1000);
    // The day as a number of days since 1970, not toDate: ClickHouse prints day 0 as 0000-00-00.
    const rows = await this.clickhouse.rows<{ day: string; item: string; total: string }>(
      `SELECT intDiv(toUInt32(occurred_at), 86400) AS day, subscription_item_id AS item,
              toString(sumIf(quantity, voided = 0)) AS total
         FROM ${this.table} FINAL
        WHERE org_id = ${integer(orgId)}
          AND subscription_item_id IN (${items})
          AND occurred_at >= toDateTime(${fromS}, 'UTC')
          AND occurred_at < toDateTime(${toS}, 'UTC')
        GROUP BY day, item`,
    );
    return rows.map((row) => ({
      date: new Date(Number(row.day) * 86_400_000).toISOString().slice(0, 10),
      subscription_item_id: Number(row.item),
      quantity: toScale8(row.total),
    }));
  }
}

/** ClickHouse prints Decimal(38, 8) without trailing zeros on some releases: 8 digits, as Postgres. */
function toScale8(text: string): string {
  const [whole, fraction = ''] = text.split('.');
  return `${whole}.${fraction.padEnd(8, '0')}`;
}

function integer(value: number): number {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not an integer: ${value}`);
  return value;
}
