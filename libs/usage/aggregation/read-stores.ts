import type { ClickHouse } from '../../clickhouse/index.js';
import type { CommonConfig } from '../../config/index.js';
import type { Queryable } from '../../db/index.js';
import { DependencyGuard } from '../../dependency-guard/index.js';
import { type Admin, createKafka } from '../../kafka/index.js';
import type { Logger } from '../../log/index.js';
import type { UsageCounter } from '../domain/counter.js';
import type { UsageEventLog } from '../event-log/log.js';
import { waitForSinkCatchUp } from '../sinks/catch-up.js';
import { POSTGRES_SINK_NAME } from '../sinks/postgres.js';
import { sinkWatermark } from '../sinks/watermark.js';
import { type DailyUsage, PostgresDailyTotalsAggregator, type UsageAggregator } from './aggregator.js';
import { ClickHouseUsageAggregator } from './clickhouse.js';

/**
 * What the usage read-back reads and writes through (docs/architecture.md, "The usage read-back"): totals through the aggregation
 * port (Postgres daily totals, see openUsageReadStores), the pg-sink's watermark for `as_of`, and
 * the usage log the voids travel on.
 */
export interface UsageReadStores {
  aggregator: UsageAggregator;
  /** Every event answered 201 before this instant is counted by `aggregator`. */
  asOf(): Promise<Date>;
  /**
   * Resolves true once Postgres `usage_events` holds every event accepted before the call (at once
   * without Kafka), false past `timeoutMs`: a void naming an event still on its way waits for it.
   */
  eventsCaughtUp(timeoutMs: number): Promise<boolean>;
  /** The log voids are appended to, after their event. */
  eventLog: UsageEventLog;
  /** The per-item period counters a void subtracts from (set by openUsageIngest). */
  counter?: UsageCounter;
  close(): Promise<void>;
}

type ReadConfig = Pick<
  CommonConfig,
  | 'CLICKHOUSE_URL'
  | 'CLICKHOUSE_DATABASE'
  | 'KAFKA_BROKERS'
  | 'KAFKA_CLIENT_ID'
  | 'KAFKA_USAGE_TOPIC'
  | 'KAFKA_CONSUMER_GROUP_PREFIX'
>;

/** How long a ClickHouse read may take before ClickHouse is probed (and, if silent, called down). */
const CLICKHOUSE_WAIT_MS = 2000;

/**
 * The read-back's totals come from Postgres' daily totals in every mode (docs/decisions.md): one
 * row per item and day, kept exact by the statements that insert and void events, where ClickHouse
 * would scan every event of the period with FINAL. In the distributed mode the pg-sink writes them,
 * so `as_of` is its watermark; the billing run keeps reading ClickHouse (openUsageAggregator), and
 * both are exact, so the preview still equals the run's invoice.
 */
export function openUsageReadStores(
  config: ReadConfig,
  db: Queryable,
  eventLog: UsageEventLog,
  _log?: Logger,
): UsageReadStores {
  const distributed = Boolean(config.KAFKA_BROKERS);
  const aggregator = new PostgresDailyTotalsAggregator(db);
  const sink = POSTGRES_SINK_NAME;
  // one connection for every caller: concurrent callers wait for the same connect
  let admin: Promise<Admin> | undefined;
  return {
    aggregator,
    async asOf() {
      if (!distributed) return new Date();
      return (await sinkWatermark(db, sink, config.KAFKA_USAGE_TOPIC)) ?? new Date(0);
    },
    async eventsCaughtUp(timeoutMs) {
      if (!config.KAFKA_BROKERS) return true;
      if (!admin) {
        const created = createKafka({
          brokers: config.KAFKA_BROKERS,
          clientId: `${config.KAFKA_CLIENT_ID}-read-back`,
        }).admin();
        admin = created.connect().then(() => created);
        admin.catch(() => {
          admin = undefined;
        });
      }
      try {
        await waitForSinkCatchUp(await admin, {
          topic: config.KAFKA_USAGE_TOPIC,
          groupId: `${config.KAFKA_CONSUMER_GROUP_PREFIX}${POSTGRES_SINK_NAME}`,
          timeoutMs,
          pollMs: 50,
        });
        return true;
      } catch (error) {
        if ((error as Error).name === 'SinkBehindError') return false;
        throw error;
      }
    },
    eventLog,
    async close() {
      await (await admin?.catch(() => undefined))?.disconnect();
    },
  };
}

/**
 * ClickHouse reads (the billing run's totals) under a DependencyGuard, as Kafka, Redis and Postgres calls are: while it is
 * down, reads fail at once with DependencyUnavailableError (503 with Retry-After), and a slow
 * query that ClickHouse still answers its ping for keeps waiting.
 */
export function guardedClickHouseAggregator(clickhouse: ClickHouse, log: Logger): GuardedUsageAggregator {
  const guard = new DependencyGuard({
    name: 'clickhouse',
    label: 'The usage store',
    waitMs: CLICKHOUSE_WAIT_MS,
    whenSlow: 'probe',
    probe: () => clickhouse.rows('SELECT 1'),
    isOutage: isClickHouseOutage,
    log,
  });
  return new GuardedUsageAggregator(new ClickHouseUsageAggregator(clickhouse), guard);
}

/** A refused, reset or timed-out connection; a ClickHouse error answer is not an outage. */
export function isClickHouseOutage(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (
    typeof code === 'string' &&
    /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE)$/.test(code)
  )
    return true;
  const message = (error as Error | null)?.message ?? '';
  return /ECONNREFUSED|ECONNRESET|socket hang up|Timeout error|fetch failed/i.test(message);
}

export class GuardedUsageAggregator implements UsageAggregator {
  constructor(
    private readonly inner: UsageAggregator,
    private readonly guard: DependencyGuard,
  ) {}

  /** Stops the guard's probing (on close). */
  close(): void {
    this.guard.close();
  }

  totals(orgId: number, itemIds: readonly number[], from: Date, to: Date): Promise<Map<number, string>> {
    return this.guard.run(() => this.inner.totals(orgId, itemIds, from, to));
  }

  daily(orgId: number, itemIds: readonly number[], from: Date, to: Date): Promise<DailyUsage[]> {
    return this.guard.run(() => this.inner.daily(orgId, itemIds, from, to));
  }
}
