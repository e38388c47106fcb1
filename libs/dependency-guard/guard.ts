import { withTimeout } from '../config/index.js';
import type { Logger } from '../log/index.js';

/**
 * A call refused or given up on because its dependency is down, or one that failed with the outage
 * itself (a refused, lost or timed-out connection): answered 503 with Retry-After, never a 500.
 * `label` says what is down in words a client reads (`The usage log`); `dependency` is the name
 * logs and /readyz use.
 */
export class DependencyUnavailableError extends Error {
  constructor(
    readonly dependency: string,
    reason: string,
    readonly label: string,
    options?: { cause?: unknown },
  ) {
    super(`${dependency} is unavailable (${reason})`, options);
    this.name = 'DependencyUnavailableError';
  }
}

export interface DependencyGuardOptions {
  /** Named in logs, metrics-free errors and /readyz: `kafka`, `redis`, `database`. */
  name: string;
  /** What the dependency is to a client, as an error's detail names it: `The usage log`. */
  label: string;
  /** How long a call may wait for the dependency's answer before the dependency is suspected. */
  waitMs: number;
  /**
   * What a call past `waitMs` means. `fail`: the wait is the bound (the call fails, the dependency
   * is down). `probe`: the probe decides; a dependency that answers it is only slow, and the call
   * keeps waiting (a long statement is not an outage).
   */
  whenSlow: 'fail' | 'probe';
  /** Resolves when the dependency answers; run when it is suspected and, while down, to see it back. */
  probe: () => Promise<unknown>;
  /** Failures of a call that mean the dependency itself is gone (a refused or lost connection). */
  isOutage?: (error: unknown) => boolean;
  probeIntervalMs?: number;
  /** How often a lasting outage is summarized in the log. */
  summaryIntervalMs?: number;
  log: Logger;
}

interface Waiting {
  /** Neighbours in the guard's list of waiting calls (null when first, last or removed). */
  prev: Waiting | null;
  next: Waiting | null;
  /** performance.now() when the call started. */
  started: number;
  /** When it was last found slow (a probe it survived is not repeated before another waitMs). */
  suspectedAt: number;
  giveUp(error: DependencyUnavailableError): void;
}

/**
 * Bounds how long callers wait on one dependency and, once it is known to be down, refuses at
 * once instead of letting every request wait out its own timeout. It is known down when a call
 * waits past `waitMs` (and, with `probe`, the probe does not answer either), or fails with an
 * outage; every caller still waiting is then given up on at that moment. While down, the probe
 * runs every `probeIntervalMs`; the first answer ends the outage. An outage is logged once when it
 * starts, summarized while it lasts and logged once when it ends: callers log nothing per request.
 * Waits are checked by one watchdog timer, not a timer per call (calls are on the hot path).
 */
export class DependencyGuard {
  private downSince: number | undefined;
  private reason = '';
  /** In the order the calls started: the first is the one that has waited longest. */
  private readonly waiting = new WaitingList();
  private watchdog: NodeJS.Timeout | undefined;
  private refusedSinceSummary = 0;
  private refusedTotal = 0;
  private probing: Promise<void> | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private summaryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: DependencyGuardOptions) {}

  get name(): string {
    return this.options.name;
  }

  get available(): boolean {
    return this.downSince === undefined;
  }

  /**
   * `call`'s result; or DependencyUnavailableError at once while the dependency is down, or as
   * soon as it is found down while the call waits. `abandon` runs for a call given up on, so the
   * caller can drop what it holds (a connection whose statement is stuck).
   */
  run<T>(call: () => Promise<T>, abandon?: () => void): Promise<T> {
    if (this.downSince !== undefined) {
      this.refusedSinceSummary++;
      this.refusedTotal++;
      return Promise.reject(this.unavailable(this.reason));
    }
    this.watch();
    return new Promise<T>((resolve, reject) => {
      let answered = false;
      const waiting: Waiting = {
        prev: null,
        next: null,
        started: performance.now(),
        suspectedAt: 0,
        giveUp: (error) => {
          if (answered) return;
          answered = true;
          this.waiting.delete(waiting);
          abandon?.();
          reject(error);
        },
      };
      this.waiting.add(waiting);
      call().then(
        (value) => {
          if (answered) return;
          answered = true;
          this.waiting.delete(waiting);
          resolve(value);
        },
        (error: unknown) => {
          if (answered) return;
          answered = true;
          this.waiting.delete(waiting);
          if (!this.options.isOutage?.(error)) return reject(error);
          // The call that finds the outage is answered as every call after it will be.
          this.markDown(describe(error));
          reject(this.unavailable(describe(error), error));
        },
      );
    });
  }

  private unavailable(reason: string, cause?: unknown): DependencyUnavailableError {
    return new DependencyUnavailableError(
      this.options.name,
      reason,
      this.options.label,
      cause === undefined ? undefined : { cause },
    );
  }

  private watch(): void {
    if (this.watchdog || this.closed) return;
    const tickMs = Math.max(10, Math.min(250, Math.floor(this.options.waitMs / 4)));
    this.watchdog = setInterval(() => {
      const now = performance.now();
      for (let waiting = this.waiting.first; waiting; waiting = waiting.next) {
        if (now - waiting.started < this.options.waitMs) break;
        if (now - waiting.suspectedAt < this.options.waitMs) continue;
        waiting.suspectedAt = now;
        this.slow(waiting);
        if (this.downSince !== undefined) break;
      }
    }, tickMs);
    this.watchdog.unref();
  }

  /** Stops probing and summarizing (at shutdown). */
  close(): void {
    this.closed = true;
    clearInterval(this.watchdog);
    clearTimeout(this.probeTimer);
    clearInterval(this.summaryTimer);
  }

  private slow(waiting: Waiting): void {
    const reason = `no answer within ${this.options.waitMs} ms`;
    if (this.options.whenSlow === 'fail') {
      this.markDown(reason);
      waiting.giveUp(this.unavailable(reason));
      return;
    }
    this.probing ??= withTimeout(this.options.probe(), this.options.waitMs)
      .then(
        () => {},
        () => this.markDown(reason),
      )
      .finally(() => {
        this.probing = undefined;
      });
  }

  private markDown(reason: string): void {
    if (this.downSince !== undefined || this.closed) return;
    this.downSince = Date.now();
    this.reason = reason;
    this.refusedSinceSummary = 0;
    this.refusedTotal = 0;
    // One line, no stack: the outage is expected to be waited out, not debugged from a trace.
    this.options.log.error({ dependency: this.options.name, reason }, `${this.options.name} unavailable`);
    const error = this.unavailable(reason);
    for (const waiting of this.waiting.toArray()) waiting.giveUp(error);
    const summaryMs = this.options.summaryIntervalMs ?? 60_000;
    this.summaryTimer = setInterval(() => {
      this.options.log.warn(
        {
          dependency: this.options.name,
          reason: this.reason,
          seconds: Math.round((Date.now() - this.downSince!) / 1000),
          refusedLastInterval: this.refusedSinceSummary,
        },
        `${this.options.name} still unavailable`,
      );
      this.refusedSinceSummary = 0;
    }, summaryMs);
    this.summaryTimer.unref();
    this.scheduleProbe(0);
  }

  private scheduleProbe(delayMs: number): void {
    if (this.closed) return;
    this.probeTimer = setTimeout(() => {
      const bounded = withTimeout(this.options.probe(), this.options.waitMs);
      bounded.then(
        () => this.markUp(),
        () => this.scheduleProbe(this.options.probeIntervalMs ?? 500),
      );
    }, delayMs);
    this.probeTimer.unref();
  }

  private markUp(): void {
    if (this.downSince === undefined) return;
    clearInterval(this.summaryTimer);
    this.options.log.info(
      {
        dependency: this.options.name,
        seconds: Math.round((Date.now() - this.downSince) / 100) / 10,
        refused: this.refusedTotal,
      },
      `${this.options.name} available again`,
    );
    this.downSince = undefined;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The calls waiting, oldest first, as a list linked through the calls themselves. Not a Set: a
 * long-lived Set with an entry added and deleted per call rehashes into a new table every few
 * calls, and V8 links each discarded table to its successor; once one table of that chain is in
 * the old generation, every later table, with the calls (and whole requests) it held, survives
 * each scavenge until the next full collection. A removed call keeps no link to its neighbours.
 */
class WaitingList {
  first: Waiting | null = null;
  private last: Waiting | null = null;

  add(waiting: Waiting): void {
    waiting.prev = this.last;
    if (this.last) this.last.next = waiting;
    else this.first = waiting;
    this.last = waiting;
  }

  delete(waiting: Waiting): void {
    if (waiting.prev) waiting.prev.next = waiting.next;
    else if (this.first === waiting) this.first = waiting.next;
    else return;
    if (waiting.next) waiting.next.prev = waiting.prev;
    else this.last = waiting.prev;
    waiting.prev = null;
    waiting.next = null;
  }

  toArray(): Waiting[] {
    const all: Waiting[] = [];
    for (let waiting = this.first; waiting; waiting = waiting.next) all.push(waiting);
    return all;
  }
}
