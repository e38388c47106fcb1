import { type ClickHouse, RowBinaryWriter } from '../../clickhouse/index.js';
import {
  CLICKHOUSE_USAGE_TABLE,
  VERSION_CEILING_MS,
  VOID_VERSION,
} from '../aggregation/clickhouse-schema.js';
import type { UsageEventRecord, UsageVoidRecord } from '../domain/event.js';
import type { UsageSink } from './sink.js';

const COLUMNS = [
  'org_id',
  'subscription_item_id',
  'idempotency_key',
  'id',
  'quantity',
  'occurred_at',
  'occurred_ms',
  'recorded_at',
  'recorded_ms',
  'version',
] as const;

const VOID_COLUMNS = [...COLUMNS, 'voided', 'voided_at'] as const;

/** Its consumer group's name (after KAFKA_CONSUMER_GROUP_PREFIX): billing waits for it to catch up. */
export const CLICKHOUSE_SINK_NAME = 'ch-sink';

/**
 * ClickHouse `usage_events`. Rows go in RowBinary (the quantity as a scaled 128-bit integer, so it
 * stays exact): ClickHouse parses no text, and the sink builds no string per row. A redelivered
 * event lands as a second row with the same identity, which ReplacingMergeTree and FINAL reduce
 * to one.
 */
export class ClickHouseUsageSink implements UsageSink {
  readonly name = CLICKHOUSE_SINK_NAME;
  private readonly table: string;

  constructor(private readonly clickhouse: ClickHouse) {
    this.table = `${clickhouse.database}.${CLICKHOUSE_USAGE_TABLE}`;
  }

  async write(events: readonly UsageEventRecord[]): Promise<void> {
    if (!events.length) return;
    const rows = new RowBinaryWriter(events.length * 128);
    for (const event of events) writeEventRow(rows, event, VERSION_CEILING_MS - event.recordedAtMs);
    await this.clickhouse.insertRowBinary(this.table, COLUMNS, rows.bytes());
  }

  /** The voided copy of each event's row, at VOID_VERSION: it replaces the event's row for good. */
  async writeVoids(voids: readonly UsageVoidRecord[]): Promise<void> {
    if (!voids.length) return;
    const rows = new RowBinaryWriter(voids.length * 128);
    for (const { event, voidedAtMs } of voids) {
      writeEventRow(rows, event, VOID_VERSION)
        .uint8(1)
        .uint32(Math.floor(voidedAtMs / 1000));
    }
    await this.clickhouse.insertRowBinary(this.table, VOID_COLUMNS, rows.bytes());
  }
}

/** The columns of COLUMNS, in their order. */
function writeEventRow(rows: RowBinaryWriter, event: UsageEventRecord, version: number): RowBinaryWriter {
  return rows
    .uint64(event.orgId)
    .uint64(event.subscriptionItemId)
    .string(event.idempotencyKey)
    .uuid(event.id)
    .decimal128(event.quantity, 8)
    .uint32(Math.floor(event.occurredAtMs / 1000))
    .uint16(event.occurredAtMs % 1000)
    .uint32(Math.floor(event.recordedAtMs / 1000))
    .uint16(event.recordedAtMs % 1000)
    .uint64(version);
}
