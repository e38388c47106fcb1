import type { ClickHouse } from '../../clickhouse/index.js';

export const CLICKHOUSE_USAGE_TABLE = 'usage_events';

/**
 * Usage events in ClickHouse, for aggregation. DDL valid on ClickHouse 18.16 and current releases:
 * DateTime (seconds) plus a millisecond column instead of DateTime64, Decimal(38, 8) quantities.
 *
 * ReplacingMergeTree keyed on the event identity (the same triple as Postgres' unique key) keeps
 * one row per identity once parts merge, and queries read it with FINAL, so a redelivered event
 * never counts twice. `version` makes the earliest recorded event of an identity the one kept,
 * as Postgres keeps the first insert: it falls as recorded_at rises.
 *
 * A void is a copy of the event's row with `voided` = 1 and a version above every event version
 * (VOID_VERSION): it replaces the event's row whichever arrives first and however often either is
 * written again. Aggregates sum `quantity` only where `voided` = 0 after FINAL (sumIf, not a WHERE
 * that could be applied before the rows of an identity are collapsed).
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
      version UInt64,
      voided UInt8 DEFAULT 0,
      voided_at DateTime('UTC') DEFAULT toDateTime(0, 'UTC')
    ) ENGINE = ReplacingMergeTree(version)
    PARTITION BY toYYYYMM(occurred_at)
    ORDER BY (org_id, subscription_item_id, idempotency_key)`,
  ];
}

/** Columns added after the table was first created, for tables created before them. */
const ADDED_COLUMNS: readonly { name: string; type: string }[] = [
  { name: 'voided', type: 'UInt8 DEFAULT 0' },
  { name: 'voided_at', type: "DateTime('UTC') DEFAULT toDateTime(0, 'UTC')" },
];

/** Creates what is missing; safe to run on every deploy (`console clickhouse migrate`). */
export async function migrateClickHouse(
  clickhouse: ClickHouse,
): Promise<{ database: string; tables: string[] }> {
  for (const statement of clickhouseUsageDdl(clickhouse.database)) await clickhouse.command(statement);
  // ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS: the table's columns say what is missing.
  const present = new Set(
    (
      await clickhouse.rows<{ name: string }>(
        `SELECT name FROM system.columns WHERE database = '${clickhouse.database}' AND table = '${CLICKHOUSE_USAGE_TABLE}'`,
      )
    ).map((row) => row.name),
  );
  for (const column of ADDED_COLUMNS) {
    if (present.has(column.name)) continue;
    await clickhouse.command(
      `ALTER TABLE ${clickhouse.database}.${CLICKHOUSE_USAGE_TABLE} ADD COLUMN ${column.name} ${column.type}`,
    );
  }
  return { database: clickhouse.database, tables: [CLICKHOUSE_USAGE_TABLE] };
}

/** Larger than any recorded_at in ms until the year 2255, so `version` stays positive. */
export const VERSION_CEILING_MS = 9_000_000_000_000;

/** The version of a void's row: above every event version (they are below VERSION_CEILING_MS). */
export const VOID_VERSION = 2 * VERSION_CEILING_MS;
