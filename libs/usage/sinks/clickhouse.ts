import { type ClickHouse, tabSeparatedRow } from '../../clickhouse/index.js';
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
 * ClickHouse `usage_events`. Rows go as TabSeparated text, which ClickHouse 18.16 parses into
 * Decimal exactly. A redelivered event lands as a second row with the same identity, which
 * ReplacingMergeTree and FINAL reduce to one.
 */
export class ClickHouseUsageSink implements UsageSink {
  readonly name = CLICKHOUSE_SINK_NAME;
  private readonly table: string;

  constructor(private readonly clickhouse: ClickHouse) {
    this.table = `${clickhouse.database}.${CLICKHOUSE_USAGE_TABLE}`;
  }

  async write(events: readonly UsageEventRecord[]): Promise<void> {
    if (!events.length) return;
    let lines = '';
    for (const event of events) {
      lines += tabSeparatedRow([
        event.orgId,
        event.subscriptionItemId,
        event.idempotencyKey,
        event.id,
        event.quantity,
        Math.floor(event.occurredAtMs / 1000),
        event.occurredAtMs % 1000,
        Math.floor(event.recordedAtMs / 1000),
        event.recordedAtMs % 1000,
        VERSION_CEILING_MS - event.recordedAtMs,
      ]);
    }
    await this.clickhouse.insertTabSeparated(this.table, COLUMNS, lines);
  }

  /** The voided copy of each event's row, at VOID_VERSION: it replaces the event's row for good. */
  async writeVoids(voids: readonly UsageVoidRecord[]): Promise<void> {
    if (!voids.length) return;
    let lines = '';
    for (const { event, voidedAtMs } of voids) {
      lines += tabSeparatedRow([
        event.orgId,
        event.subscriptionItemId,
        event.idempotencyKey,
        event.id,
        event.quantity,
        Math.floor(event.occurredAtMs / 1000),
        event.occurredAtMs % 1000,
        Math.floor(event.recordedAtMs / 1000),
        event.recordedAtMs % 1000,
        VOID_VERSION,
        1,
        Math.floor(voidedAtMs / 1000),
      ]);
    }
    await this.clickhouse.insertTabSeparated(this.table, VOID_COLUMNS, lines);
  }
}
