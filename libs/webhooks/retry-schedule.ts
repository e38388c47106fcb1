/** How the automatic retries of one delivery are spaced (defaults: the spec's 1, 2, 4, 8 s, 5 attempts). */
export interface RetrySchedule {
  maxAttempts: number;
  /** delaysMs[n - 1] is the wait after failed attempt n; the last entry repeats if attempts outnumber it. */
  delaysMs: readonly number[];
}

export type AfterFailure = { status: 'RETRYING'; delayMs: number } | { status: 'FAILED' };

/** A failed attempt of one event, numbered from 1 over the event's whole life. */
export interface FailedAttempt {
  number: number;
  /** The event's own limit (a manual retry of a FAILED event raises it by one, a recovery by a series). */
  maxAttempts: number;
  /** Where the event's current series began: 1, or the first attempt after a recovery. */
  seriesFirstAttempt: number;
}

/**
 * The state after a failed attempt. Delays count from the start of the current series, so a
 * recovered event is retried 1, 2, 4, 8 s apart again. The delay is added to the database
 * clock, the one every dispatcher compares `next_attempt_at` with.
 */
export function afterFailedAttempt(attempt: FailedAttempt, delaysMs: readonly number[]): AfterFailure {
  if (attempt.number >= attempt.maxAttempts) return { status: 'FAILED' };
  const inSeries = Math.max(1, attempt.number - attempt.seriesFirstAttempt + 1);
  const delayMs = delaysMs[Math.min(inSeries, delaysMs.length) - 1] ?? 0;
  return { status: 'RETRYING', delayMs };
}
