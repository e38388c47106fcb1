import type pg from 'pg';
import type { Database } from '../db/index.js';
import { OUTBOX_CHANNEL } from '../events/index.js';
import type { Logger } from '../log/index.js';
import { webhookAttempts, webhookDeliveryDuration } from '../observability/index.js';
import { AttemptRecorder } from './attempt-recorder.js';
import {
  attempt,
  claimDueDeliveries,
  judge,
  type PendingDelivery,
  recordUndeliverable,
  WAITS_ITS_TURN,
  WEBHOOK_EVENT_DUE_CHANNEL,
} from './delivery.js';
import { forgetExpiredSecrets } from './endpoints.js';
import { fanOutOutbox } from './outbox-fan-out.js';
import type { HostResolver } from './ssrf-guard.js';
import { WebhookSender } from './webhook-sender.js';

export interface DispatcherSettings {
  /** Longest sleep between two looks at the outbox and the due deliveries. */
  pollMs: number;
  /** Attempts in flight at once. */
  concurrency: number;
  /** Attempts in flight at once to one endpoint (so one that hangs holds only these slots). */
  endpointConcurrency: number;
  timeoutMs: number;
  maxAttempts: number;
  retryDelaysMs: readonly number[];
  allowLocalhost: boolean;
  /** Outbox rows fanned out per transaction. */
  outboxBatchSize?: number;
  /** Tests map host names to chosen addresses; production uses the system resolver. */
  resolveHost?: HostResolver;
  /**
   * The clock that stamps each attempt (webhook-timestamp) and decides whether a previous secret
   * still signs; tests move it. Scheduling stays on the database clock.
   */
  now?: () => Date;
}

/** Never fewer than this between two loop turns with nothing to do, so an idle loop cannot spin. */
const MIN_SLEEP_MS = 5;
/** Expired previous secrets are forgotten once per this many poll intervals (they stop signing at once). */
const SECRET_SWEEP_POLLS = 10;

/**
 * The dispatcher loop: fans the outbox out into webhook events, claims due events up to the
 * concurrency, and runs each through the delivery states (delivery.ts). All scheduling lives in
 * Postgres, so any number of dispatchers share the work and a restart loses nothing.
 *
 * The loop sleeps until the first of: a NOTIFY on the outbox channel (a domain event committed) or
 * on the due channel (a manual retry), an attempt finishing (a free slot), the next due retry, or
 * the poll interval.
 */
export class WebhookDispatcher {
  private readonly sender: WebhookSender;
  private readonly recorder: AttemptRecorder;
  /** Every claimed delivery until it is recorded (what a shutdown waits for). */
  private readonly inFlight = new Set<Promise<void>>();
  /** Deliveries whose HTTP request is under way: what the concurrency limits. */
  private attempting = 0;
  /** `attempting` per endpoint id. */
  private readonly attemptingByEndpoint = new Map<string, number>();
  /** Attempts finished since start: how many slots freed since a claim. */
  private finishedAttempts = 0;
  /** The last claim, when it came back short while some endpoint was at its limit. */
  private cappedClaim: { at: number; finishedAttempts: number } | undefined;
  private readonly wake = new WakeSignal();
  private readonly leaseMs: number;
  private loop: Promise<void> | undefined;
  private stopping = false;
  private listener: pg.PoolClient | undefined;
  private releaseListener: (() => void) | undefined;
  private listenRetryAt = 0;
  private listenFailing = false;
  private outboxMayHaveRows = true;
  private lastFanOutAt = 0;
  private lastSecretSweepAt = 0;
  private readonly now: () => Date;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    private readonly settings: DispatcherSettings,
  ) {
    this.sender = new WebhookSender({
      timeoutMs: settings.timeoutMs,
      allowLocalhost: settings.allowLocalhost,
      maxSocketsPerHost: settings.concurrency,
      ...(settings.resolveHost ? { resolveHost: settings.resolveHost } : {}),
    });
    this.recorder = new AttemptRecorder(db);
    this.now = settings.now ?? (() => new Date());
    // An attempt lasts at most the timeout; twice that leaves room to record it before another
    // dispatcher may take the event over.
    this.leaseMs = 2 * settings.timeoutMs;
  }

  get activeAttempts(): number {
    return this.inFlight.size;
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
  }

  /** Stops claiming, lets the attempts in flight finish and be recorded, then releases its connection. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake.notify();
    await this.loop;
    await Promise.all(this.inFlight);
    this.releaseListener?.();
    this.sender.close();
  }

  private async run(): Promise<void> {
    // An outage fails every turn: logged when it starts, then every FAILURE_LOG_INTERVAL_MS, and
    // when it ends, instead of twice per poll.
    let failures = 0;
    let failingSince = 0;
    let loggedAt = 0;
    while (!this.stopping) {
      let sleepMs = this.settings.pollMs;
      try {
        await this.ensureListening();
        sleepMs = await this.turn();
        if (failures) {
          this.log.info({ failures, ms: Date.now() - failingSince }, 'dispatcher loop recovered');
          failures = 0;
        }
      } catch (error) {
        // Postgres unreachable or a statement failed: nothing is lost (the outbox and the leases
        // are in the database), so log and try again after the poll interval.
        const now = Date.now();
        if (failures++ === 0) failingSince = now;
        if (failures === 1 || now - loggedAt >= FAILURE_LOG_INTERVAL_MS) {
          loggedAt = now;
          this.log.error(
            { err: error, failures },
            failures === 1 ? 'dispatcher loop failed; retrying' : 'dispatcher loop still failing; retrying',
          );
        }
      }
      if (sleepMs > 0) await this.wake.wait(sleepMs);
    }
  }

  /**
   * One pass: fan out the outbox when it may hold rows, claim what fits. Returns how long to sleep:
   * 0 when more is waiting now; until the next due event when nothing is due; otherwise the poll
   * interval (a finished attempt wakes the loop earlier).
   */
  private async turn(): Promise<number> {
    const moreOutbox = await this.fanOutIfDue();
    await this.forgetExpiredSecretsIfDue();
    const room = this.roomToClaim();
    if ('waitMs' in room) return moreOutbox ? 0 : room.waitMs;
    const claimed = await this.claimAndDeliver(room.free);
    if (moreOutbox || claimed === room.free) return 0;
    return claimed ? this.settings.pollMs : this.msUntilNextDue();
  }

  /** Fans the outbox out when it may hold rows; true when a full batch suggests more are waiting. */
  private async fanOutIfDue(): Promise<boolean> {
    // A finished attempt also wakes the loop; the outbox only needs a look when a NOTIFY came,
    // the last batch was full, or a poll interval passed (a NOTIFY can be missed while reconnecting).
    if (!this.outboxMayHaveRows && Date.now() - this.lastFanOutAt < this.settings.pollMs) return false;
    const batchSize = this.settings.outboxBatchSize ?? 500;
    this.outboxMayHaveRows = false;
    this.lastFanOutAt = Date.now();
    const fannedOut = await fanOutOutbox(this.db, { batchSize, maxAttempts: this.settings.maxAttempts });
    if (fannedOut.webhookEvents) {
      this.cappedClaim = undefined;
      this.log.debug(
        { outbox_rows: fannedOut.outboxRows, webhook_events: fannedOut.webhookEvents },
        'outbox fanned out',
      );
    }
    const moreOutbox = fannedOut.outboxRows === batchSize;
    this.outboxMayHaveRows ||= moreOutbox;
    return moreOutbox;
  }

  private async forgetExpiredSecretsIfDue(): Promise<void> {
    if (Date.now() - this.lastSecretSweepAt < SECRET_SWEEP_POLLS * this.settings.pollMs) return;
    this.lastSecretSweepAt = Date.now();
    const forgotten = await forgetExpiredSecrets(this.db, this.now());
    if (forgotten) this.log.info({ endpoints: forgotten }, 'expired previous signing secrets forgotten');
  }

  /** How many deliveries to claim now, or how long to wait before trying (nothing is claimed). */
  private roomToClaim(): { free: number } | { waitMs: number } {
    const { concurrency, pollMs } = this.settings;
    // A slot frees when the HTTP request ends; recording follows in batches. Deliveries waiting to
    // be recorded are bounded too, so a slow database slows claiming instead of piling up.
    const free = Math.min(concurrency - this.attempting, 4 * concurrency - this.inFlight.size);
    // Claims come in batches of at least a quarter of the slots while attempts are running: one
    // claim per finished attempt would cost a statement per delivery.
    const batch = Math.max(1, Math.floor(concurrency / 4));
    if (this.stopping || free <= 0 || (free < batch && this.attempting > 0)) return { waitMs: pollMs };
    // The last claim came back short while endpoints were at their limit: the free slots may be
    // theirs to wait for. Claiming again after every finished attempt would cost a statement per
    // delivery; the next claim waits for a quarter of the attempts under way to finish, new
    // events, or the poll.
    const capped = this.cappedClaim;
    if (
      capped &&
      this.attempting > 0 &&
      this.finishedAttempts - capped.finishedAttempts < Math.max(1, Math.floor(this.attempting / 4)) &&
      Date.now() - capped.at < pollMs
    ) {
      return { waitMs: pollMs - (Date.now() - capped.at) };
    }
    return { free };
  }

  /** Claims up to `free` due deliveries and starts each; returns how many were claimed. */
  private async claimAndDeliver(free: number): Promise<number> {
    const due = await claimDueDeliveries(this.db, free, this.leaseMs, {
      perEndpoint: this.settings.endpointConcurrency,
      busy: this.attemptingByEndpoint,
    });
    for (const pending of due) this.track(this.deliver(pending));
    const atLimit = [...this.attemptingByEndpoint.values()].some(
      (count) => count >= this.settings.endpointConcurrency,
    );
    this.cappedClaim =
      due.length < free && atLimit ? { at: Date.now(), finishedAttempts: this.finishedAttempts } : undefined;
    return due.length;
  }

  /**
   * Milliseconds until the earliest due (or leased) event, capped by the poll interval. An event
   * waiting for its turn is not due: the attempt before it ending wakes the loop.
   */
  private async msUntilNextDue(): Promise<number> {
    const { rows } = await this.db.query<{ ms: number | null }>(
      `SELECT (EXTRACT(EPOCH FROM min(next_attempt_at) - now()) * 1000)::float8 AS ms
       FROM webhook_events w WHERE status IN ('PENDING', 'RETRYING') AND NOT (${WAITS_ITS_TURN})`,
    );
    const ms = rows[0]?.ms;
    if (ms === null || ms === undefined) return this.settings.pollMs;
    return Math.min(this.settings.pollMs, Math.max(MIN_SLEEP_MS, Math.ceil(ms)));
  }

  private track(task: Promise<void>): void {
    this.inFlight.add(task);
    void task.finally(() => {
      this.inFlight.delete(task);
      this.wake.notify();
    });
  }

  /** Runs one claimed event through its states; never rejects (a failure to record is logged). */
  private async deliver(pending: PendingDelivery): Promise<void> {
    const context = {
      webhook_event_id: pending.eventId,
      endpoint_id: pending.endpointId,
      attempt: pending.attempt,
    };
    try {
      if (!pending.endpoint.deliverable) {
        const reason = pending.endpoint.why ?? 'Not delivered: the endpoint is not active.';
        await recordUndeliverable(this.db, { kind: 'undeliverable', pending, reason });
        return;
      }
      this.countAttempt(pending.endpointId, 1);
      const attempted = await attempt(pending, this.sender, this.now()).finally(() => {
        this.countAttempt(pending.endpointId, -1);
        this.wake.notify();
      });
      const { outcome } = attempted;
      webhookAttempts.inc({ result: outcome.result });
      webhookDeliveryDuration.observe(outcome.durationMs / 1000);
      const judged = judge(attempted, this.settings.retryDelaysMs);
      const recorded = await this.recorder.record(judged);
      const details = { ...context, result: outcome.result, response_code: outcome.responseCode };
      if (!recorded) this.log.warn(details, 'webhook attempt not recorded: its lease was taken over');
      else if (judged.kind === 'failed')
        this.log.info({ ...details, next: judged.next.status }, 'webhook attempt failed');
      else this.log.debug(details, 'webhook delivered');
    } catch (error) {
      // The lease runs out and the attempt is made again: at-least-once, never lost.
      this.log.error({ ...context, err: error }, 'webhook attempt could not be recorded');
    }
  }

  private countAttempt(endpointId: string, change: 1 | -1): void {
    this.attempting += change;
    if (change < 0) this.finishedAttempts++;
    const count = (this.attemptingByEndpoint.get(endpointId) ?? 0) + change;
    if (count) this.attemptingByEndpoint.set(endpointId, count);
    else this.attemptingByEndpoint.delete(endpointId);
  }

  /**
   * LISTEN on the outbox and due channels through one pooled connection, kept for the dispatcher's life.
   * Optional: when it fails (or the connection drops) the loop still polls, and it is retried.
   */
  private async ensureListening(): Promise<void> {
    if (this.listener || this.stopping || Date.now() < this.listenRetryAt) return;
    let connection: pg.PoolClient | undefined;
    let released = false;
    // A dropped connection can emit several errors (the server's notice, then the closed socket):
    // the client goes back to the pool once, and the listener stays to absorb the later ones.
    const drop = (error: Error) => {
      if (this.listener === connection) this.listener = undefined;
      if (released) return;
      released = true;
      connection?.release(error);
    };
    try {
      connection = await this.db.pool.connect();
      connection.on('notification', (message) => {
        if (message.channel === OUTBOX_CHANNEL) this.outboxMayHaveRows = true;
        this.wake.notify();
      });
      connection.on('error', (error) => {
        if (!released)
          this.log.warn({ err: error }, 'outbox listener connection lost; polling until it is back');
        drop(error);
      });
      await connection.query(`LISTEN ${OUTBOX_CHANNEL}`);
      await connection.query(`LISTEN ${WEBHOOK_EVENT_DUE_CHANNEL}`);
      if (!released) {
        this.listener = connection;
        this.releaseListener = () => drop(new Error('dispatcher stopped'));
        if (this.listenFailing) this.log.info('listening for outbox notifications again');
        this.listenFailing = false;
      }
    } catch (error) {
      drop(error as Error);
      this.listenRetryAt = Date.now() + Math.max(this.settings.pollMs, 1000);
      // once per outage, not once per retry
      if (!this.listenFailing)
        this.log.warn({ err: error }, 'cannot LISTEN for outbox notifications; polling');
      this.listenFailing = true;
    }
  }
}

const FAILURE_LOG_INTERVAL_MS = 30_000;

/** A wake-up call for the loop; a notify while the loop is busy is kept for its next wait. */
class WakeSignal {
  private pending = false;
  private resolve: (() => void) | undefined;

  notify(): void {
    if (this.resolve) {
      this.resolve();
      this.resolve = undefined;
    } else {
      this.pending = true;
    }
  }

  wait(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.resolve = undefined;
        resolve();
      }, ms);
      this.resolve = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
