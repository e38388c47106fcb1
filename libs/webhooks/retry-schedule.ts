/** How the automatic retries of one delivery are spaced (defaults: the spec's 1, 2, 4, 8 s, 5 attempts). */
export interface RetrySchedule {
  maxAttempts: number;
  /** delaysMs[n - 1] is the wait after failed attempt n; the last entry repeats if attempts outnumber it. */
  delaysMs: readonly number[];
}

export type AfterFailure = { status: 'RETRYING'; delayMs: number } | { status: 'FAILED' };

/**
 * The state after failed attempt number `attempt` (1-based). `maxAttempts` is the event's own
 * (a manual retry of a FAILED event raises it by one, for exactly one more attempt). The delay is
 * added to the database clock, the one every dispatcher compares `next_attempt_at` with.
 */
export function afterFailedAttempt(
  attempt: number,
  maxAttempts: number,
  delaysMs: readonly number[],
): AfterFailure {
  if (attempt >= maxAttempts) return { status: 'FAILED' };
  const delayMs = delaysMs[Math.min(attempt, delaysMs.length) - 1] ?? 0;
  return { status: 'RETRYING', delayMs };
}
