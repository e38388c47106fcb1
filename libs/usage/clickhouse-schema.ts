import type { ClickHouse } from '../clickhouse/index.js';

export const CLICKHOUSE_USAGE_TABLE = 'usage_events';

/**
 * Usage events in ClickHouse, for aggregation. DDL valid on ClickHouse 18.16 and current releases:
 * DateTime (seconds) plus a millisecond column instead of DateTime64, Decimal(38, 8) quantities.
 *
 * ReplacingMergeTree keyed on the event identity (the same triple as Postgres' unique key) keeps
 * one row per identity once parts merge, and queries read it with FINAL, so a redelivered event
 * never counts twice. `version` makes the earliest recorded event of an identity the one kept,
 * as Postgres keeps the first insert: it falls as recorded_at rises.
 */
export function clickhouseUsageDdl(database: string): string[] {
  return [
    `CREATE DATABASE IF NOT EXISTS ${database}`,
    `CREATE TABLE IF NOT EXISTS ${database}.${CLICKHOUSE_USAGE_TABLE} (
      org_id UInt64,
      subscription_item_id UInt64,
      idempotency_key String,
      id UUID,
      quantity Decimal(38, 8),
      occurred_at DateTime('UTC'),
      occurred_ms UInt16,
      recorded_at DateTime('UTC'),
      recorded_ms UInt16,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    PARTITION BY toYYYYMM(occurred_at)
    ORDER BY (org_id, subscription_item_id, idempotency_key)`,
  ];
}

/** Creates what is missing; safe to run on every deploy (`console clickhouse migrate`). */
export async function migrateClickHouse(
  clickhouse: ClickHouse,
): Promise<{ database: string; tables: string[] }> {
  for (const statement of clickhouseUsageDdl(clickhouse.database)) await clickhouse.command(statement);
  return { database: clickhouse.database, tables: [CLICKHOUSE_USAGE_TABLE] };
}

/** Larger than any recorded_at in ms until the year 2255, so `version` stays positive. */
export const VERSION_CEILING_MS = 9_000_000_000_000;
