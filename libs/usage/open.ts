import { type ClickHouse, openClickHouse } from '../clickhouse/index.js';
import { type CommonConfig, reaching } from '../config/index.js';
import type { Database, Queryable } from '../db/index.js';
import { type Admin, createKafka, ensureTopic, type Kafka, kafkaCheck } from '../kafka/index.js';
import { createLogger, type Logger } from '../log/index.js';
import { clickhouseCheck, type DependencyCheck } from '../observability/index.js';
import type { Platform } from '../platform/index.js';
import { PostgresUsageAggregator, type UsageAggregator } from './aggregation/aggregator.js';
import { migrateClickHouse } from './aggregation/clickhouse-schema.js';
import {
  guardedClickHouseAggregator,
  openUsageReadStores,
  type UsageReadStores,
} from './aggregation/read-stores.js';
import { MemoryUsageDedupStore } from './dedup-store/memory.js';
import { RedisUsageDedupStore } from './dedup-store/redis.js';
import type { UsageDedupStore } from './dedup-store/store.js';
import { UsageCounter } from './domain/counter.js';
import { UsageIngest } from './domain/ingest.js';
import { SubscriptionItemCache } from './domain/items.js';
import { DEFAULT_LINGER } from './domain/linger.js';
import { InProcessUsageEventLog } from './event-log/in-process.js';
import { KafkaUsageEventLog } from './event-log/kafka.js';
import type { UsageEventLog } from './event-log/log.js';
import { waitForSinkCatchUp } from './sinks/catch-up.js';
import { CLICKHOUSE_SINK_NAME, ClickHouseUsageSink } from './sinks/clickhouse.js';
import { KafkaSinkRunner } from './sinks/kafka-consumer.js';
import { POSTGRES_SINK_NAME, PostgresUsageSink } from './sinks/postgres.js';
import type { UsageSink } from './sinks/sink.js';
import { SinkWatermarkRecorder } from './sinks/watermark.js';

export interface OpenedUsageAggregator {
  aggregator: UsageAggregator;
  /**
   * Resolves once the totals hold every usage event accepted before the call: billing must not
   * invoice a period while accepted events of it are still on their way to the store it reads.
   * At once when ingest writes that store itself (no Kafka); with Kafka, once the sink the totals
   * come from (ch-sink, or pg-sink without ClickHouse) has committed past the log's end as of the
   * call. Throws SinkBehindError after `timeoutMs` (default 60 s).
   */
  caughtUp(options?: { timeoutMs?: number; onWaiting?: (message: string) => void }): Promise<void>;
  close(): Promise<void>;
}

type AggregatorConfig = Pick<
  CommonConfig,
  | 'CLICKHOUSE_URL'
  | 'CLICKHOUSE_DATABASE'
  | 'KAFKA_BROKERS'
  | 'KAFKA_CLIENT_ID'
  | 'KAFKA_USAGE_TOPIC'
  | 'KAFKA_CONSUMER_GROUP_PREFIX'
>;

const CATCH_UP_TIMEOUT_MS = 60_000;

/**
 * The usage aggregation port for this process's mode: ClickHouse when CLICKHOUSE_URL is set,
 * SQL over Postgres `usage_events` otherwise (docs/architecture.md, "Two modes").
 */
export async function openUsageAggregator(
  config: AggregatorConfig,
  db: Queryable,
  log: Logger = createLogger({ level: 'warn', service: 'billing' }),
): Promise<OpenedUsageAggregator> {
  const clickhouse = config.CLICKHOUSE_URL
    ? openClickHouse({ url: config.CLICKHOUSE_URL, database: config.CLICKHOUSE_DATABASE })
    : undefined;
  // guarded: a ClickHouse that is down fails the run at once instead of each read waiting it out
  const guarded = clickhouse ? guardedClickHouseAggregator(clickhouse, log) : undefined;
  const sink = clickhouse ? CLICKHOUSE_SINK_NAME : POSTGRES_SINK_NAME;
  let admin: Admin | undefined;
  return {
    aggregator: guarded ?? new PostgresUsageAggregator(db),
    async caughtUp(options = {}) {
      if (!config.KAFKA_BROKERS) return;
      if (!admin) {
        admin = createKafka({
          brokers: config.KAFKA_BROKERS,
          clientId: `${config.KAFKA_CLIENT_ID}-billing`,
        }).admin();
        await reaching('KAFKA_BROKERS', admin.connect());
      }
      await waitForSinkCatchUp(admin, {
        topic: config.KAFKA_USAGE_TOPIC,
        groupId: `${config.KAFKA_CONSUMER_GROUP_PREFIX}${sink}`,
        timeoutMs: options.timeoutMs ?? CATCH_UP_TIMEOUT_MS,
        onWaiting: options.onWaiting,
      });
    },
    async close() {
      guarded?.close();
      await admin?.disconnect();
      await clickhouse?.close();
    },
  };
}

/** The ingest core with its ports, as one process uses it. */
export interface UsagePipeline {
  ingest: UsageIngest;
  /** The per-item period counters ingest keeps (the entitlement check's `used`). */
  counter: UsageCounter;
  /** What the usage read-back (and voids) go through, on the same log as ingest. */
  readStores: UsageReadStores;
  /** Dependencies beyond the platform's that serving usage needs (Kafka when it is the log). */
  checks(): DependencyCheck[];
  /** After the HTTP front ends drained: key releases still on their way, the log's last batch, connections. */
  close(): Promise<void>;
}

/**
 * The per-item period counters on `store` (the dedup store ingest counts in), rebuilt from the
 * Postgres `readStores` reads; set as `readStores.counter`, which voids subtract from.
 */
export function openUsageCounter(
  config: Pick<
    CommonConfig,
    'REDIS_KEY_PREFIX' | 'USAGE_COUNTER' | 'KAFKA_BROKERS' | 'KAFKA_ACK_TIMEOUT_MS' | 'KAFKA_LINGER_MS'
  >,
  db: Database,
  store: UsageDedupStore,
  readStores: UsageReadStores,
  items: SubscriptionItemCache = new SubscriptionItemCache(db, ITEM_CACHE),
): UsageCounter {
  const counter = new UsageCounter({
    store,
    db,
    items,
    keyPrefix: config.REDIS_KEY_PREFIX,
    enabled: config.USAGE_COUNTER,
    eventsCaughtUp: (timeoutMs) => readStores.eventsCaughtUp(timeoutMs),
    // an event reserved before a rebuild's cut is on the log, or released, within this
    settleMs: config.KAFKA_BROKERS ? config.KAFKA_ACK_TIMEOUT_MS + config.KAFKA_LINGER_MS + 200 : 200,
  });
  readStores.counter = counter;
  return counter;
}

/** How long an item's usage type is cached; unknown items for less, so a new item is found soon. */
const ITEM_CACHE = { ttlMs: 60_000, negativeTtlMs: 2000, maxEntries: 100_000 };
/** How often ingest reads which items' lifetimes ended (a removal is refused within about this). */
const ITEM_CHANGES_POLL_MS = 500;

/**
 * Builds the ingest core on this process's ports (docs/architecture.md, "Two modes"): Redis or in-process maps for
 * idempotency, Kafka or the in-process log (which writes to Postgres, and ClickHouse when set).
 */
export async function openUsageIngest(
  platform: Platform,
  options: { log?: Logger; listeners?: readonly UsageSink[] } = {},
): Promise<UsagePipeline> {
  const { config, db } = platform;
  const log = options.log ?? platform.log;
  const store = platform.redis
    ? new RedisUsageDedupStore(platform.redis, config.REDIS_KEY_PREFIX, platform.redisGuard)
    : new MemoryUsageDedupStore(platform.rateLimitStore);

  // The in-process log writes the embedded database this process serves without its socket:
  // the same commit before the 201, less work per write (docs/decisions.md).
  const { eventLog, clickhouse } = await openUsageEventLog(
    config,
    platform.directDb ?? db,
    log,
    options.listeners,
  );

  const items = new SubscriptionItemCache(db, ITEM_CACHE);
  items.watchChanges(ITEM_CHANGES_POLL_MS);
  const readStores = openUsageReadStores(config, db, eventLog, log);
  const counter = openUsageCounter(config, db, store, readStores, items);
  const ingest = new UsageIngest({
    store,
    log: eventLog,
    items,
    counter,
    rateLimiter: platform.rateLimiter,
    keyPrefix: config.REDIS_KEY_PREFIX,
    idempotencyTtlSeconds: config.IDEMPOTENCY_TTL_DAYS * 86_400,
    logger: log,
    // a round trip to Redis and one to Kafka per turn: what thin turns pay alone
    linger: platform.redis && config.KAFKA_BROKERS ? DEFAULT_LINGER : undefined,
  });
  return {
    ingest,
    counter,
    readStores,
    checks: () => [
      ...eventLog.checks(),
      ...(clickhouse && config.CLICKHOUSE_URL ? [clickhouseCheck(config.CLICKHOUSE_URL)] : []),
    ],
    async close() {
      await items.stopWatching();
      await ingest.drain();
      await readStores.close();
      await eventLog.close();
      await store.flush();
      await clickhouse?.close();
    },
  };
}

/**
 * The usage event log of this process's mode (docs/architecture.md, "Two modes"): Kafka, or the in-process log writing
 * Postgres (and ClickHouse when CLICKHOUSE_URL is set). Ingest appends accepted events to it; so
 * does anything else that records usage (the demo seed), so every store receives them alike.
 * `clickhouse` is the client the in-process log writes with, to close with it.
 */
export async function openUsageEventLog(
  config: CommonConfig,
  db: Queryable,
  log: Logger,
  /** Further readers of the in-process log (policies on counted usage); Kafka has its own groups. */
  listeners: readonly UsageSink[] = [],
): Promise<{ eventLog: UsageEventLog; clickhouse: ClickHouse | undefined }> {
  if (config.KAFKA_BROKERS) {
    const kafka = createKafka({ brokers: config.KAFKA_BROKERS, clientId: config.KAFKA_CLIENT_ID }, log);
    await ensureTopic(kafka, config.KAFKA_USAGE_TOPIC, config.KAFKA_TOPIC_PARTITIONS, log);
    const kafkaLog = new KafkaUsageEventLog(kafka, {
      topic: config.KAFKA_USAGE_TOPIC,
      lingerMs: config.KAFKA_LINGER_MS,
      ackTimeoutMs: config.KAFKA_ACK_TIMEOUT_MS,
      log,
    });
    await kafkaLog.connect().catch((error) => {
      log.warn({ err: error }, 'Kafka is not reachable yet; usage requests get 503 until it is');
    });
    return { eventLog: kafkaLog, clickhouse: undefined };
  }
  const sinks: UsageSink[] = [];
  let clickhouse: ClickHouse | undefined;
  if (config.CLICKHOUSE_URL) {
    clickhouse = openClickHouse({ url: config.CLICKHOUSE_URL, database: config.CLICKHOUSE_DATABASE });
    await reaching('CLICKHOUSE_URL', migrateClickHouse(clickhouse));
    sinks.push(new ClickHouseUsageSink(clickhouse));
  }
  const eventLog = new InProcessUsageEventLog(new PostgresUsageSink(db), sinks, {
    lingerMs: config.KAFKA_LINGER_MS,
    listeners,
    listenerIntervalMs: LISTENER_INTERVAL_MS,
  });
  return { eventLog, clickhouse };
}

/**
 * The in-process log hands its listeners what was written at most this often: the distributed
 * mode's listener group reads a batch per SINK_FLUSH_MS (200 ms by default) too.
 */
const LISTENER_INTERVAL_MS = 200;

/** How often each sink records its committed watermark (the floor of `lag_seconds`). */
const WATERMARK_INTERVAL_MS = 250;

export interface UsageSinks {
  runners: KafkaSinkRunner[];
  checks(): DependencyCheck[];
  /** Each sink writes and commits what it buffered, then leaves its group. */
  stop(): Promise<void>;
}

/**
 * The sinks of the distributed mode, each its own consumer group on the usage topic: `pg-sink`
 * into Postgres and, when CLICKHOUSE_URL is set, `ch-sink` into ClickHouse (its table is created
 * if missing).
 */
export async function startUsageSinks(options: {
  config: Pick<
    CommonConfig,
    | 'KAFKA_BROKERS'
    | 'KAFKA_CLIENT_ID'
    | 'KAFKA_USAGE_TOPIC'
    | 'KAFKA_TOPIC_PARTITIONS'
    | 'CLICKHOUSE_URL'
    | 'CLICKHOUSE_DATABASE'
    | 'KAFKA_CONSUMER_GROUP_PREFIX'
  > & { SINK_BATCH_SIZE: number; SINK_FLUSH_MS: number };
  db: Queryable;
  log: Logger;
  /** Further consumers of the log, each in a consumer group of its own name (policies on counted usage). */
  listeners?: readonly UsageSink[];
}): Promise<UsageSinks> {
  const { config, db, log } = options;
  if (!config.KAFKA_BROKERS) {
    throw new Error('the sinks read Kafka: set KAFKA_BROKERS (without it, ingest writes to Postgres itself)');
  }
  const kafka: Kafka = createKafka(
    { brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-sinks` },
    log,
    'patient',
  );
  await ensureTopic(kafka, config.KAFKA_USAGE_TOPIC, config.KAFKA_TOPIC_PARTITIONS, log);
  const sinks: UsageSink[] = [new PostgresUsageSink(db)];
  let clickhouse: ClickHouse | undefined;
  if (config.CLICKHOUSE_URL) {
    clickhouse = openClickHouse({ url: config.CLICKHOUSE_URL, database: config.CLICKHOUSE_DATABASE });
    await reaching('CLICKHOUSE_URL', migrateClickHouse(clickhouse));
    sinks.push(new ClickHouseUsageSink(clickhouse));
  }
  // one admin client for the process: the watermarks, the readiness check and every runner's
  // reading of the topic's partitions
  const admin = kafka.admin();
  const runnerOf = (sink: UsageSink) =>
    new KafkaSinkRunner({
      kafka,
      admin,
      topic: config.KAFKA_USAGE_TOPIC,
      groupId: `${config.KAFKA_CONSUMER_GROUP_PREFIX}${sink.name}`,
      sink,
      batchSize: config.SINK_BATCH_SIZE,
      flushMs: config.SINK_FLUSH_MS,
      log,
    });
  const storeRunners = sinks.map(runnerOf);
  // listeners wait for the stores (the read-back's as_of): they start once the stores' groups and
  // watermarks run, and record no watermark of their own
  const listenerRunners = (options.listeners ?? []).map(runnerOf);
  const runners = [...storeRunners, ...listenerRunners];
  const watermarks = storeRunners.map(
    (runner) =>
      new SinkWatermarkRecorder({
        admin,
        db,
        topic: config.KAFKA_USAGE_TOPIC,
        groupId: `${config.KAFKA_CONSUMER_GROUP_PREFIX}${runner.name}`,
        sink: runner.name,
        intervalMs: WATERMARK_INTERVAL_MS,
        log,
      }),
  );
  try {
    // connected first: a runner reads the topic's partitions as soon as its group assigns it some
    await admin.connect();
    await Promise.all(storeRunners.map((runner) => runner.start()));
    for (const recorder of watermarks) recorder.start();
    // in the background: the stores' groups are what "running" means; /readyz waits for these too
    for (const runner of listenerRunners) {
      runner
        .start()
        .catch((error: unknown) => log.error({ err: error, sink: runner.name }, 'listener failed to start'));
    }
  } catch (error) {
    await Promise.allSettled([...runners.map((runner) => runner.stop()), admin.disconnect()]);
    await clickhouse?.close();
    throw error;
  }
  return {
    runners,
    checks: () => [
      kafkaCheck(admin),
      ...(config.CLICKHOUSE_URL ? [clickhouseCheck(config.CLICKHOUSE_URL)] : []),
      // the stores make the process ready; a listener catching up (or rejoining) does not hold it back
      ...storeRunners.map((runner) => runner.check()),
    ],
    async stop() {
      await Promise.all(watermarks.map((recorder) => recorder.stop()));
      await Promise.all(runners.map((runner) => runner.stop()));
      await admin.disconnect();
      await clickhouse?.close();
    },
  };
}
