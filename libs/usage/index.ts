/**
 * Usage events: taken in, deduplicated, logged, stored, aggregated and read back.
 *
 *   domain/       the ingest rules (ingest.ts), requests, events and their ids, the item cache,
 *                 listing and voiding stored events, the per-item period counters (counter.ts)
 *   wire/         request bodies and response bodies of the usage routes, shared by both front ends
 *   dedup-store/  where accepted idempotency keys live (Redis, or memory when embedded)
 *   event-log/    the durable log every accepted event and void goes through (Kafka, in-process)
 *   sinks/        what consumes the log into Postgres and ClickHouse, with its watermark
 *   aggregation/  period totals for billing and the read-back, from Postgres or ClickHouse
 *   open.ts       the wiring of all of these from the configuration
 */
export {
  type DailyUsage,
  PostgresDailyTotalsAggregator,
  PostgresUsageAggregator,
  type UsageAggregator,
  ZERO_QUANTITY,
} from './aggregation/aggregator.js';
export { ClickHouseUsageAggregator } from './aggregation/clickhouse.js';
export { clickhouseUsageDdl, migrateClickHouse } from './aggregation/clickhouse-schema.js';
export {
  GuardedUsageAggregator,
  isClickHouseOutage,
  openUsageReadStores,
  type UsageReadStores,
} from './aggregation/read-stores.js';
export { MemoryUsageDedupStore } from './dedup-store/memory.js';
export { RedisUsageDedupStore } from './dedup-store/redis.js';
export type { CountedBucket, DedupEntry, UsageDedupStore } from './dedup-store/store.js';
export { type CounterPeriod, UsageCounter } from './domain/counter.js';
export {
  decodeLogMessage,
  encodeLogMessages,
  toPublicUsageEvent,
  type UsageEventRecord,
  type UsageVoidRecord,
} from './domain/event.js';
export {
  type BatchOutcome,
  type IngestReply,
  type RecordedEvent,
  UsageIngest,
  type UsageIngestOptions,
} from './domain/ingest.js';
export { SubscriptionItemCache } from './domain/items.js';
export { type ItemSchedule, periodAt } from './domain/periods.js';
export {
  getUsageEvent,
  listUsageEvents,
  type UsageEventFilter,
  VOID_CATCH_UP_MS,
  voidUsageEvent,
} from './domain/usage-events.js';
export { type VoidCorrection, type VoidingEvent, voidUsageEventWith } from './domain/void-with-correction.js';
export { InProcessUsageEventLog } from './event-log/in-process.js';
export { KafkaUsageEventLog } from './event-log/kafka.js';
export type { UsageEventLog } from './event-log/log.js';
export {
  type OpenedUsageAggregator,
  openUsageAggregator,
  openUsageCounter,
  openUsageEventLog,
  openUsageIngest,
  startUsageSinks,
  type UsagePipeline,
  type UsageSinks,
} from './open.js';
export { type PartitionLag, SinkBehindError } from './sinks/catch-up.js';
export { ClickHouseUsageSink } from './sinks/clickhouse.js';
export { type KafkaSinkOptions, KafkaSinkRunner } from './sinks/kafka-consumer.js';
export { PostgresUsageSink } from './sinks/postgres.js';
export type { UsageSink } from './sinks/sink.js';
export { SinkWatermarkRecorder, sinkWatermark } from './sinks/watermark.js';
export { parseUsageBody } from './wire/body.js';
export { batchResponseBody, eventResponseBody } from './wire/responses.js';
