import { Batcher } from '../../batching/index.js';
import type { DependencyCheck } from '../../observability/index.js';
import type { UsageEventRecord, UsageIdentity, UsageVoidRecord } from '../domain/event.js';
import type { PostgresUsageSink } from '../sinks/postgres.js';
import type { UsageSink } from '../sinks/sink.js';
import type { UsageEventLog } from './log.js';

/**
 * The embedded twin of Kafka: concurrent appends are gathered and written straight to Postgres
 * (then to any further sink, e.g. ClickHouse when it is configured without Kafka). An append
 * resolves once every store holds the events, so "acknowledged by the log" means "in Postgres"
 * here, and Postgres tells which event of an identity is stored: after a restart has emptied the
 * in-process dedup store, a repeated key still gets the stored event.
 *
 * Gathering follows Nagle's rule, never a fixed wait: with no write running, the appends of one
 * event-loop turn are written at its end; while one runs (the embedded database serves one
 * statement at a time anyway), later appends gather for the next write, at most the linger.
 */
export class InProcessUsageEventLog implements UsageEventLog {
  private readonly windows: Batcher<readonly UsageEventRecord[], UsageEventRecord[]>;

  constructor(
    private readonly postgres: PostgresUsageSink,
    private readonly others: readonly UsageSink[],
    options: { lingerMs: number },
  ) {
    this.windows = new Batcher((windows) => this.write(windows), {
      lingerMs: options.lingerMs,
      maxInFlight: 1,
      maxWeight: 5000,
      weight: (events) => events.length,
    });
  }

  append(events: readonly UsageEventRecord[]): Promise<UsageEventRecord[]> {
    return this.windows.submit(events);
  }

  /** Postgres remembers what the in-process dedup store forgot at a restart. */
  stored(identity: UsageIdentity): Promise<UsageEventRecord | null> {
    return this.postgres.find(identity);
  }

  /** Postgres is the caller's (its transaction voids the row); the other stores are written now. */
  async appendVoids(voids: readonly UsageVoidRecord[]): Promise<void> {
    if (!voids.length) return;
    for (const sink of this.others) await sink.writeVoids(voids);
  }

  checks(): DependencyCheck[] {
    return [];
  }

  close(): Promise<void> {
    return this.windows.flush();
  }

  private async write(windows: (readonly UsageEventRecord[])[]): Promise<UsageEventRecord[][]> {
    const events = windows.flat();
    const { stored } = await this.postgres.writeReturningStored(events);
    // The stored events, not only the new ones: after a failed write to another sink, the client's
    // retry finds its event in Postgres already, and this is its one chance to reach that sink.
    for (const sink of this.others) await sink.write(stored);
    const results: UsageEventRecord[][] = [];
    let at = 0;
    for (const window of windows) {
      results.push(stored.slice(at, at + window.length));
      at += window.length;
    }
    return results;
  }
}
