import type { Queryable } from '../db/index.js';
import { type FailedDelivery, recordAttempts, type SucceededDelivery } from './delivery.js';

/** An attempt with its outcome known: what is recorded. */
type FinishedAttempt = SucceededDelivery | FailedDelivery;

/**
 * Gathers finished attempts and records them together: a batch is written when it reaches
 * `maxBatch` or `maxDelayMs` after its first entry, whichever comes first. One statement per
 * batch instead of one per delivery is what lets a dispatcher keep up with a busy outbox. Each
 * caller learns whether its own attempt was recorded; a failed write rejects every caller of
 * the batch (their leases run out and the attempts are made again).
 */
export class AttemptRecorder {
  private batch: {
    delivery: FinishedAttempt;
    resolve: (recorded: boolean) => void;
    reject: (error: unknown) => void;
  }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly maxBatch = 100,
    private readonly maxDelayMs = 5,
  ) {}

  record(delivery: FinishedAttempt): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.batch.push({ delivery, resolve, reject });
      if (this.batch.length >= this.maxBatch) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.maxDelayMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.batch;
    this.batch = [];
    recordAttempts(
      this.db,
      batch.map((entry) => entry.delivery),
    ).then(
      (recorded) => {
        for (const entry of batch) entry.resolve(recorded.has(entry.delivery.attempted.pending.eventId));
      },
      (error: unknown) => {
        for (const entry of batch) entry.reject(error);
      },
    );
  }
}
