export {
  type DailyUsage,
  PostgresDailyTotalsAggregator,
  PostgresUsageAggregator,
  type UsageAggregator,
  ZERO_QUANTITY,
} from './aggregation.js';
export { parseUsageBody } from './body.js';
export { type PartitionLag, SinkBehindError } from './catch-up.js';
export { ClickHouseUsageAggregator } from './clickhouse-aggregation.js';
export { clickhouseUsageDdl, migrateClickHouse } from './clickhouse-schema.js';
export {
  type BatchOutcome,
  type IngestReply,
  type RecordedEvent,
  UsageIngest,
  type UsageIngestOptions,
} from './core.js';
export {
  decodeLogMessage,
  encodeLogMessages,
  toPublicUsageEvent,
  type UsageEventRecord,
  type UsageVoidRecord,
} from './event.js';
export { InProcessUsageEventLog } from './in-process-log.js';
export { SubscriptionItemCache } from './items.js';
export { KafkaUsageEventLog } from './kafka-log.js';
export type { UsageEventLog } from './log.js';
export { MemoryUsageDedupStore } from './memory.js';
export {
  type OpenedUsageAggregator,
  openUsageAggregator,
  openUsageEventLog,
  openUsageIngest,
  startUsageSinks,
  type UsagePipeline,
  type UsageSinks,
} from './open.js';
export {
  GuardedUsageAggregator,
  isClickHouseOutage,
  openUsageReadStores,
  type UsageReadStores,
} from './read-stores.js';
export { RedisUsageDedupStore } from './redis.js';
export { batchResponseBody, eventResponseBody } from './responses.js';
export type { UsageSink } from './sink.js';
export { ClickHouseUsageSink } from './sink-clickhouse.js';
export { type KafkaSinkOptions, KafkaSinkRunner } from './sink-consumer.js';
export { PostgresUsageSink } from './sink-postgres.js';
export type { UsageDedupStore } from './store.js';
export {
  getUsageEvent,
  listUsageEvents,
  type UsageEventFilter,
  VOID_CATCH_UP_MS,
  voidUsageEvent,
} from './usage-events.js';
export { SinkWatermarkRecorder, sinkWatermark } from './watermark.js';
