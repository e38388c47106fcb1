import type { CommonConfig } from '../config/index.js';
import type { Queryable } from '../db/index.js';
import { PostgresUsageAggregator, type UsageAggregator } from './aggregation.js';

export interface OpenedUsageAggregator {
  aggregator: UsageAggregator;
  close(): Promise<void>;
}

/**
 * The usage aggregation port for this process's mode: ClickHouse when CLICKHOUSE_URL is set,
 * SQL over Postgres `usage_events` otherwise (DESIGN §2).
 */
export async function openUsageAggregator(
  config: Pick<CommonConfig, 'CLICKHOUSE_URL' | 'CLICKHOUSE_DATABASE'>,
  db: Queryable,
): Promise<OpenedUsageAggregator> {
  if (config.CLICKHOUSE_URL) {
    // Filled in with the ClickHouse sink (issue 4).
    throw new Error('ClickHouse usage aggregation is not available yet');
  }
  return { aggregator: new PostgresUsageAggregator(db), close: async () => {} };
}
