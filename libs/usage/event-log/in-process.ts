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
 *
 * Listeners (policies on counted usage, e.g. the guardrails) are not stores: an append never waits
 * for them, and they are handed what was written at most once per `listenerIntervalMs`, in the
 * order written (events and voids alike), as the distributed mode's listener group reads a batch
 * per SINK_FLUSH_MS. Handed each write, their evaluation queries took the one embedded backend
 * once per request at a few connections, and the requests' own writes waited behind them
 * (docs/decisions.md, "The embedded log hands listeners a batch per interval").
 */
export class InProcessUsageEventLog implements UsageEventLog {
  private readonly windows: Batcher<readonly UsageEventRecord[], UsageEventRecord[]>;
  private readonly listeners: readonly UsageSink[];
  private readonly listenerIntervalMs: number;
  /** Written and not yet handed to the listeners, in the order written. */
  private unheard: ({ events: UsageEventRecord[] } | { voids: UsageVoidRecord[] })[] = [];
  private handOffTimer: NodeJS.Timeout | undefined;
  private lastHandOffAt = Number.NEGATIVE_INFINITY;
  private handingOff: Promise<void> = Promise.resolve();

  constructor(
    private readonly postgres: PostgresUsageSink,
    private readonly others: readonly UsageSink[],
    options: {
      lingerMs: number;
      /** Readers that are no store: handed what was written, never waited for by an append. */
      listeners?: readonly UsageSink[];
      /** The shortest time between two hand-offs to the listeners (0: after every write). */
      listenerIntervalMs?: number;
    },
  ) {
    this.windows = new Batcher((windows) => this.write(windows), {
      lingerMs: options.lingerMs,
      maxInFlight: 1,
      maxWeight: 5000,
      weight: (events) => events.length,
    });
    this.listeners = options.listeners ?? [];
    this.listenerIntervalMs = options.listenerIntervalMs ?? 0;
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
    this.hear({ voids: [...voids] });
  }

  checks(): DependencyCheck[] {
    return [];
  }

  /** Writes what is gathered, then hands the listeners everything written. */
  async close(): Promise<void> {
    await this.windows.flush();
    clearTimeout(this.handOffTimer);
    this.handOffTimer = undefined;
    await this.handOff();
  }

  private async write(windows: (readonly UsageEventRecord[])[]): Promise<UsageEventRecord[][]> {
    const events = windows.flat();
    const { stored } = await this.postgres.writeReturningStored(events);
    // The stored events, not only the new ones: after a failed write to another sink, the client's
    // retry finds its event in Postgres already, and this is its one chance to reach that sink.
    for (const sink of this.others) await sink.write(stored);
    this.hear({ events: stored });
    const results: UsageEventRecord[][] = [];
    let at = 0;
    for (const window of windows) {
      results.push(stored.slice(at, at + window.length));
      at += window.length;
    }
    return results;
  }

  /** Queues what was written for the listeners: handed at once, or when the interval has passed. */
  private hear(written: { events: UsageEventRecord[] } | { voids: UsageVoidRecord[] }): void {
    if (!this.listeners.length) return;
    this.unheard.push(written);
    if (this.handOffTimer) return;
    const wait = Math.max(0, this.lastHandOffAt + this.listenerIntervalMs - Date.now());
    this.handOffTimer = setTimeout(() => {
      this.handOffTimer = undefined;
      void this.handOff();
    }, wait);
    this.handOffTimer.unref();
  }

  /** One hand-off at a time, so listeners see writes in order; a listener's failure is its own. */
  private handOff(): Promise<void> {
    this.handingOff = this.handingOff.then(async () => {
      const batch = this.unheard;
      this.unheard = [];
      this.lastHandOffAt = Date.now();
      for (const part of mergedRuns(batch)) {
        for (const listener of this.listeners) {
          // a listener reports its own failures (the guardrails log theirs); the next one still hears
          await ('events' in part ? listener.write(part.events) : listener.writeVoids(part.voids)).catch(
            () => {},
          );
        }
      }
    });
    return this.handingOff;
  }
}

/** Consecutive writes of one kind as one: fewer, larger hand-offs, the order kept. */
function mergedRuns(
  batch: readonly ({ events: UsageEventRecord[] } | { voids: UsageVoidRecord[] })[],
): ({ events: UsageEventRecord[] } | { voids: UsageVoidRecord[] })[] {
  const runs: ({ events: UsageEventRecord[] } | { voids: UsageVoidRecord[] })[] = [];
  for (const part of batch) {
    const last = runs.at(-1);
    if (last && 'events' in last && 'events' in part) last.events.push(...part.events);
    else if (last && 'voids' in last && 'voids' in part) last.voids.push(...part.voids);
    else runs.push('events' in part ? { events: [...part.events] } : { voids: [...part.voids] });
  }
  return runs;
}
