import type { Queryable } from '../../libs/db/index.js';
import { createLogger } from '../../libs/log/index.js';
import {
  InProcessUsageEventLog,
  openUsageReadStores,
  PostgresUsageSink,
  type UsageReadStores,
} from '../../libs/usage/index.js';

/**
 * The usage read-back's stores over `db`, events logged in process into Postgres. Without a topic,
 * the embedded mode's (as_of is now). With one, the distributed api's: as_of is the pg-sink's
 * watermark of that topic (setSinkWatermark), and the broker named, which nothing here can reach,
 * is dialled only by a catch-up wait.
 */
export function readStoresOver(db: Queryable, topic?: string): UsageReadStores {
  return openUsageReadStores(
    {
      CLICKHOUSE_URL: undefined,
      CLICKHOUSE_DATABASE: 'billing',
      KAFKA_BROKERS: topic === undefined ? undefined : ['127.0.0.1:1'],
      KAFKA_CLIENT_ID: 'test',
      KAFKA_USAGE_TOPIC: topic ?? 'usage.events',
      KAFKA_CONSUMER_GROUP_PREFIX: '',
    },
    db,
    new InProcessUsageEventLog(new PostgresUsageSink(db), [], { lingerMs: 0 }),
    createLogger({ level: 'silent', service: 'test' }),
  );
}

/** The pg-sink's watermark of `topic` (one partition), as its recorder sets it. */
export async function setSinkWatermark(db: Queryable, topic: string, coveredUntil: Date): Promise<void> {
  await db.query(
    `INSERT INTO usage_sink_watermarks (sink, topic, log_partition, committed_offset, covered_until)
     VALUES ('pg-sink', $1, 0, 0, $2)
     ON CONFLICT (sink, topic, log_partition) DO UPDATE SET covered_until = excluded.covered_until`,
    [topic, coveredUntil],
  );
}
