import type { ClickHouse } from '../clickhouse/index.js';
import { type UsageAggregator, ZERO_QUANTITY } from './aggregation.js';
import { CLICKHOUSE_USAGE_TABLE } from './clickhouse-schema.js';

/**
 * Usage totals from ClickHouse: FINAL collapses the rows of one identity to the kept one before
 * summing, so the totals equal Postgres' for the same events. Every value inlined in the query is
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
    if (subscriptionItemIds.length === 0) return result;
    const items = subscriptionItemIds.map(integer).join(', ');
    const fromMs = Math.max(0, integer(from.getTime()));
    const toMs = Math.max(0, integer(to.getTime()));
    // The DateTime bounds prune partitions; the millisecond bounds make [from, to) exact.
    const rows = await this.clickhouse.rows<{ item: string; total: string }>(
      `SELECT subscription_item_id AS item, toString(sum(quantity)) AS total
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
}

function integer(value: number): number {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not an integer: ${value}`);
  return value;
}
