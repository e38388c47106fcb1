import { BillingApiError } from '../errors.js';
import type { components } from '../generated/openapi.js';
import { type BackoffPolicy, isRetryableStatus, retryDelayMs } from '../retry.js';
import {
  type PreparedEvent,
  prepareUsageEvent,
  type ReportedUsageEvent,
  type UsageEventInput,
} from './event.js';
import { EventQueue } from './event-queue.js';
import { uuidv7 } from './uuidv7.js';

type BatchItemResult = components['schemas']['UsageEventBatchItemResult'];

/** The service takes at most this many events in one batch request. */
export const MAX_BATCH_EVENTS = 1000;

/** An event the service refused for good (a 4xx of its own, or of its whole batch): never retried. */
export interface UsageRejection {
  event: ReportedUsageEvent;
  error: BillingApiError;
}

/** Why a batch goes back to the buffer for another attempt. */
export type RetryReason =
  | 'network'
  | 'timeout'
  | 'rate_limited'
  | 'unavailable'
  | 'server_error'
  | 'bad_response';

/** Called as events move; each gets a count of events. Exceptions they throw are reported as warnings. */
export interface UsageReporterMetrics {
  /** Events the service answered 201: recorded now, or recorded before under the same key. */
  sent?(events: number): void;
  /** Events of a request that failed as a whole, buffered again for another attempt. */
  retried?(events: number, reason: RetryReason): void;
  /** Events handed to `onRejected`. */
  rejected?(events: number): void;
  /** Events refused at `report()` because the buffer was full (`whenFull: 'drop'`). */
  dropped?(events: number): void;
  /** The events held (buffered or in a request), after each change. */
  buffered?(events: number): void;
}

/** When the buffer holds `maxBufferedEvents`: wait for room (the default), or drop the new event. */
export type FullBufferPolicy =
  | { whenFull?: 'wait' }
  | { whenFull: 'drop'; onDropped: (event: ReportedUsageEvent) => void };

export type UsageReporterOptions = FullBufferPolicy & {
  /** The API's base URL, path included (the ingest service's, where usage goes to it). */
  baseUrl: string;
  apiKey: string;
  /** Events the service refused for good, one call per event. Default: a process warning. */
  onRejected?: (rejection: UsageRejection) => void;
  /** Events held at most (buffered and in requests); default 100,000. */
  maxBufferedEvents?: number;
  /** Events per request, at most 1,000 (the default). */
  maxBatchEvents?: number;
  /** JSON bytes of events per request (the service's default body limit is 1 MiB); default 1,000,000. */
  maxBatchBytes?: number;
  /** How long an event may wait for its batch to fill; default 1,000 ms. */
  flushIntervalMs?: number;
  /** Requests in flight at once; default 4. */
  maxConcurrentRequests?: number;
  /** A request without an answer by then is abandoned and retried; default 30,000 ms. */
  requestTimeoutMs?: number;
  /** The backoff between failed attempts; default 500 ms doubling up to 30,000 ms. */
  retry?: Partial<BackoffPolicy>;
  metrics?: UsageReporterMetrics;
  /** A fetch of your own; the global fetch by default. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
};

export interface UsageReporterStats {
  /** Events held: buffered, or in a request not yet answered. */
  buffered: number;
  /** `report()` calls waiting for room (`whenFull: 'wait'`). */
  waiting: number;
  reported: number;
  sent: number;
  rejected: number;
  /** Events sent again after their request failed (one event retried twice counts twice). */
  retried: number;
  dropped: number;
}

export interface CloseResult {
  /**
   * Events not confirmed by the deadline, as they were reported (keys included). Some may have
   * been recorded by a request that was still running: sending them again later with these same
   * keys records each once.
   */
  unsent: ReportedUsageEvent[];
}

/** An event in the reporter: prepared at report(), with the flush() generation it belongs to. */
interface Held extends PreparedEvent {
  generation: number;
}

/** What became of one batch request. */
type Outcome =
  | { kind: 'answered'; results: BatchItemResult[] }
  | { kind: 'retry'; reason: RetryReason; retryAfterMs?: number | undefined }
  | { kind: 'reject'; error: BillingApiError }
  | { kind: 'too_large'; error: BillingApiError };

const RESOLVED: Promise<void> = Promise.resolve();
/** The abort reason of requests cut short by close()'s deadline. */
const ABANDONED = Symbol('abandoned');
const USER_AGENT = 'billing-service-client-node/0.1.0';

/**
 * Reports usage events in batches (`POST /usage/events/batch`), each event with its idempotency
 * key fixed at `report()`, so that a request retried after a failure, a timeout or a lost answer
 * never records an event twice. A request that fails as a whole (no answer, 408, 429, 5xx) is
 * retried with its events and keys unchanged after a jittered backoff that honours `Retry-After`,
 * and pauses every request until then; an event the service refuses (a 4xx of its own) goes to
 * `onRejected` and is never retried. The buffer is bounded (`maxBufferedEvents`, counting events
 * in requests too); when full, `report()` waits for room or drops the event (`whenFull`).
 *
 * States of an event: waiting for room -> buffered -> in a request -> sent | rejected, or back to
 * buffered when its request failed; at close()'s deadline whatever is not sent is returned unsent.
 */
export class UsageReporter {
  private readonly options: UsageReporterOptions;
  private readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  private readonly maxBuffered: number;
  private readonly maxBatchEvents: number;
  private readonly flushIntervalMs: number;
  private readonly maxConcurrent: number;
  private readonly requestTimeoutMs: number;
  private readonly backoff: BackoffPolicy;
  /** Lowered when the service answers 413: its body limit is below ours. */
  private maxBatchBytes: number;

  private readonly queue = new EventQueue<Held>();
  private readonly waiting = new EventQueue<Held & { admit: () => void }>();
  private inFlightEvents = 0;
  private inFlightRequests = 0;
  private readonly controllers = new Set<AbortController>();

  /** Consecutive failed requests: the exponent of the backoff. */
  private failures = 0;
  private pausedUntil = 0;
  private pauseTimer: NodeJS.Timeout | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  /** The oldest buffered event waited its flush interval (or was sent before): partial batches go. */
  private due = false;

  /** flush() generations: events of each not yet sent or rejected. */
  private generation = 0;
  private readonly unsettled = new Map<number, number>();
  private readonly flushWaiters: { generation: number; resolve: () => void }[] = [];
  private readonly idleWaiters: (() => void)[] = [];

  private closed = false;
  /** close()'s deadline passed: nothing more is sent. */
  private abandoned = false;
  private closing: Promise<CloseResult> | undefined;

  private readonly totals = { reported: 0, sent: 0, rejected: 0, retried: 0, dropped: 0 };

  constructor(options: UsageReporterOptions) {
    this.options = options;
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/usage/events/batch`;
    this.headers = {
      authorization: `Bearer ${options.apiKey}`,
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
    };
    this.fetch = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
    this.maxBuffered = positiveInteger('maxBufferedEvents', options.maxBufferedEvents ?? 100_000);
    this.maxBatchEvents = positiveInteger('maxBatchEvents', options.maxBatchEvents ?? MAX_BATCH_EVENTS);
    if (this.maxBatchEvents > MAX_BATCH_EVENTS) {
      throw new RangeError(`maxBatchEvents must be at most ${MAX_BATCH_EVENTS}`);
    }
    this.maxBatchBytes = positiveInteger('maxBatchBytes', options.maxBatchBytes ?? 1_000_000);
    this.flushIntervalMs = positiveInteger('flushIntervalMs', options.flushIntervalMs ?? 1000);
    this.maxConcurrent = positiveInteger('maxConcurrentRequests', options.maxConcurrentRequests ?? 4);
    this.requestTimeoutMs = positiveInteger('requestTimeoutMs', options.requestTimeoutMs ?? 30_000);
    this.backoff = {
      baseDelayMs: positiveInteger('retry.baseDelayMs', options.retry?.baseDelayMs ?? 500),
      maxDelayMs: positiveInteger('retry.maxDelayMs', options.retry?.maxDelayMs ?? 30_000),
    };
  }

  /**
   * Validates the event and buffers it; returns at once. An invalid event throws
   * UsageEventValidationError here, synchronously, and nothing is buffered. Its key (yours, or
   * a UUIDv7) and its timestamp (yours, or now) are fixed now. The promise resolves once the event
   * is buffered: at once, unless the buffer is full and `whenFull` is `'wait'` (then await it, or
   * the waiting reports themselves are unbounded); with `'drop'` a full buffer hands the event to
   * `onDropped` and the promise resolves all the same.
   */
  report(event: UsageEventInput): Promise<void> {
    if (this.closed) throw new Error('UsageReporter.report after close()');
    const held = prepareUsageEvent(event, Date.now(), uuidv7) as Held;
    held.generation = this.generation;
    this.totals.reported++;
    if (this.waiting.length === 0 && this.held() < this.maxBuffered) {
      this.hold(held);
      this.enqueue(held);
      return RESOLVED;
    }
    if (this.options.whenFull === 'drop') {
      this.totals.dropped++;
      this.hook('dropped', 1);
      this.callback('onDropped', () =>
        (this.options as { onDropped: (e: ReportedUsageEvent) => void }).onDropped(held.event),
      );
      return RESOLVED;
    }
    this.hold(held);
    return new Promise((resolve) => this.waiting.push(Object.assign(held, { admit: resolve })));
  }

  /**
   * Sends every event reported before this call, without waiting for batches to fill; resolves
   * once each is sent or rejected. While the service is unreachable it keeps retrying: bound the
   * wait with close()'s deadline, or race it with a timer of your own.
   */
  flush(): Promise<void> {
    const generation = this.generation++;
    if (!this.unsettledThrough(generation)) return RESOLVED;
    return new Promise((resolve) => {
      this.flushWaiters.push({ generation, resolve });
      this.pump();
    });
  }

  /**
   * Stops taking events (report() then throws) and sends everything held, as flush() does, for
   * at most `timeoutMs` (default 30,000). What is not sent by then (requests still running are
   * aborted) is returned, with its keys: keep it and send it again later. Call it on SIGTERM.
   */
  close(options: { timeoutMs?: number } = {}): Promise<CloseResult> {
    this.closing ??= this.shutDown(options.timeoutMs ?? 30_000);
    return this.closing;
  }

  get stats(): UsageReporterStats {
    return { buffered: this.held(), waiting: this.waiting.length, ...this.totals };
  }

  private async shutDown(timeoutMs: number): Promise<CloseResult> {
    this.closed = true;
    let deadline: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([
      this.flush().then(() => true),
      new Promise<false>((resolve) => {
        deadline = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
    clearTimeout(deadline);
    if (!inTime) {
      this.abandoned = true;
      for (const controller of this.controllers) controller.abort(ABANDONED);
      if (this.inFlightRequests > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
    clearTimeout(this.flushTimer);
    clearTimeout(this.pauseTimer);
    const waiting = this.waiting.drain();
    // The reports still waiting for room end too: their events are among the unsent.
    for (const entry of waiting) entry.admit();
    const left = [...this.queue.drain(), ...waiting];
    this.hook('buffered', 0);
    return { unsent: left.map((held) => held.event) };
  }

  /** Events buffered or in requests: what the bound counts. */
  private held(): number {
    return this.queue.length + this.inFlightEvents;
  }

  /** Counts an event into its flush() generation until it is sent or rejected. */
  private hold(held: Held): void {
    this.unsettled.set(held.generation, (this.unsettled.get(held.generation) ?? 0) + 1);
  }

  private enqueue(held: Held): void {
    this.queue.push(held);
    this.hook('buffered', this.held());
    if (this.queue.length >= this.maxBatchEvents || this.queue.bytes >= this.maxBatchBytes) this.pump();
    else if (!this.flushTimer && !this.due) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        this.due = true;
        this.pump();
      }, this.flushIntervalMs);
    }
  }

  /** Starts as many requests as the state allows: not while paused, not past maxConcurrentRequests. */
  private pump(): void {
    if (this.abandoned) return;
    const waitMs = this.pausedUntil - Date.now();
    if (waitMs > 0) {
      this.pauseTimer ??= setTimeout(() => {
        this.pauseTimer = undefined;
        this.pump();
      }, waitMs);
      return;
    }
    const urgent = () => this.due || this.closed || this.flushWaiters.length > 0;
    while (this.inFlightRequests < this.maxConcurrent && this.queue.length > 0) {
      const full = this.queue.length >= this.maxBatchEvents || this.queue.bytes >= this.maxBatchBytes;
      if (!full && !urgent()) break;
      const batch = this.queue.take(this.maxBatchEvents, this.maxBatchBytes);
      this.send(batch).catch((error: unknown) => warn('a usage batch failed unexpectedly', error));
    }
    if (this.queue.length === 0) {
      this.due = false;
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
    }
  }

  private async send(batch: Held[]): Promise<void> {
    this.inFlightRequests++;
    this.inFlightEvents += batch.length;
    const controller = new AbortController();
    this.controllers.add(controller);
    const timer = setTimeout(() => controller.abort(new Error('timeout')), this.requestTimeoutMs);
    let outcome: Outcome;
    try {
      outcome = await this.post(batch, controller.signal);
    } finally {
      clearTimeout(timer);
      this.controllers.delete(controller);
      this.inFlightRequests--;
      this.inFlightEvents -= batch.length;
    }
    this.apply(batch, outcome);
    if (this.inFlightRequests === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    this.admitWaiting();
    this.pump();
  }

  /** One request; every way it can end is an Outcome (it never throws). */
  private async post(batch: Held[], signal: AbortSignal): Promise<Outcome> {
    let body = '{"events":[';
    for (let i = 0; i < batch.length; i++) body += i === 0 ? batch[i]!.json : `,${batch[i]!.json}`;
    body += ']}';
    let response: Response;
    let text: string;
    // Raced with the signal too: a fetch of the caller's that ignores it must not hold the batch.
    const aborted = rejectOnAbort(signal);
    try {
      response = await Promise.race([
        this.fetch(this.url, { method: 'POST', headers: this.headers, body, signal }),
        aborted.promise,
      ]);
      text = await Promise.race([response.text(), aborted.promise]);
    } catch {
      return { kind: 'retry', reason: signal.aborted && signal.reason !== ABANDONED ? 'timeout' : 'network' };
    } finally {
      aborted.dispose();
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    if (response.ok) {
      const results = (parsed as { data?: unknown } | undefined)?.data;
      // The service answers a batch 200 with one result per event, in order. Any other success (a
      // 202 or 204 from something in between) or other results cannot be matched to the events:
      // their fate is unknown, so the batch is retried whole (the keys make that safe), not
      // rejected as if it had not been recorded.
      if (response.status !== 200 || !Array.isArray(results) || results.length !== batch.length)
        return { kind: 'retry', reason: 'bad_response' };
      return { kind: 'answered', results: results as BatchItemResult[] };
    }
    const error = BillingApiError.fromAnswer(response.status, parsed, response.headers);
    if (isRetryableStatus(response.status)) {
      return { kind: 'retry', reason: retryReason(response.status), retryAfterMs: error.retryAfterMs };
    }
    if (response.status === 413 && batch.length > 1) return { kind: 'too_large', error };
    return { kind: 'reject', error };
  }

  private apply(batch: Held[], outcome: Outcome): void {
    switch (outcome.kind) {
      case 'answered':
        this.applyResults(batch, outcome.results);
        return;
      case 'retry':
        this.retryLater(batch, outcome.reason, outcome.retryAfterMs);
        return;
      case 'too_large': {
        // The service's body limit is below ours: halve the batches from now on and send again.
        let bytes = 0;
        for (const held of batch) bytes += held.bytes;
        this.maxBatchBytes = Math.max(1, Math.floor(bytes / 2));
        this.queue.putFront(batch);
        this.due = true;
        return;
      }
      case 'reject':
        for (const held of batch) this.reject(held, outcome.error);
        this.settled();
        return;
    }
  }

  private applyResults(batch: Held[], results: BatchItemResult[]): void {
    let sent = 0;
    const again: Held[] = [];
    for (let i = 0; i < batch.length; i++) {
      const held = batch[i]!;
      const { status, error } = results[i]!;
      if (status === 201) {
        sent++;
        this.settle(held);
      } else if (isRetryableStatus(status)) again.push(held);
      else this.reject(held, BillingApiError.fromAnswer(status, error));
    }
    if (sent) {
      this.totals.sent += sent;
      this.hook('sent', sent);
    }
    if (again.length)
      this.retryLater(again, retryReason(results.find((r) => isRetryableStatus(r.status))!.status));
    else this.failures = 0;
    this.settled();
  }

  /** The batch goes back to the front of the buffer; every request waits out the backoff. */
  private retryLater(batch: Held[], reason: RetryReason, retryAfterMs?: number): void {
    this.queue.putFront(batch);
    // Events put back have waited already: they go with the next request, full or not.
    this.due = true;
    if (this.abandoned) return;
    this.failures++;
    this.totals.retried += batch.length;
    this.hook('retried', batch.length, reason);
    const delay = retryDelayMs(this.failures, retryAfterMs, this.backoff);
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + delay);
  }

  private reject(held: Held, error: BillingApiError): void {
    this.totals.rejected++;
    this.hook('rejected', 1);
    const { onRejected } = this.options;
    if (onRejected) this.callback('onRejected', () => onRejected({ event: held.event, error }));
    else warn(`usage event ${held.event.idempotency_key} rejected`, error);
    this.settle(held);
  }

  private settle(held: Held): void {
    const left = (this.unsettled.get(held.generation) ?? 1) - 1;
    if (left > 0) this.unsettled.set(held.generation, left);
    else this.unsettled.delete(held.generation);
  }

  /** After events settled: the buffered hook, and every flush() whose events are all settled. */
  private settled(): void {
    this.hook('buffered', this.held());
    for (let i = this.flushWaiters.length - 1; i >= 0; i--) {
      const waiter = this.flushWaiters[i]!;
      if (!this.unsettledThrough(waiter.generation)) {
        this.flushWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  private unsettledThrough(generation: number): boolean {
    for (const [g, count] of this.unsettled) if (g <= generation && count > 0) return true;
    return false;
  }

  /** Waiting reports enter the buffer, oldest first, as room frees up. */
  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.held() < this.maxBuffered) {
      const [entry] = this.waiting.take(1, Number.POSITIVE_INFINITY);
      this.enqueue(entry!);
      entry!.admit();
    }
  }

  private hook<K extends keyof UsageReporterMetrics>(
    name: K,
    ...args: Parameters<NonNullable<UsageReporterMetrics[K]>>
  ): void {
    const hook = this.options.metrics?.[name] as ((...a: typeof args) => void) | undefined;
    if (!hook) return;
    try {
      hook(...args);
    } catch (error) {
      warn(`the metrics hook ${name} threw`, error);
    }
  }

  private callback(name: string, call: () => void): void {
    try {
      call();
    } catch (error) {
      warn(`${name} threw`, error);
    }
  }
}

/** A promise rejected when `signal` aborts, and a way to stop listening. */
function rejectOnAbort(signal: AbortSignal): { promise: Promise<never>; dispose(): void } {
  let listener: (() => void) | undefined;
  const promise = new Promise<never>((_, reject) => {
    listener = () => reject(signal.reason);
    signal.addEventListener('abort', listener, { once: true });
  });
  promise.catch(() => {});
  return { promise, dispose: () => signal.removeEventListener('abort', listener!) };
}

function retryReason(status: number): RetryReason {
  if (status === 429) return 'rate_limited';
  if (status === 503) return 'unavailable';
  if (status === 408) return 'timeout';
  return 'server_error';
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
  return value;
}

function warn(message: string, error: unknown): void {
  process.emitWarning(`UsageReporter: ${message}: ${error instanceof Error ? error.message : String(error)}`);
}
