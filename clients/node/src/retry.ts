/**
 * When to try again after a failed request: the pure part of the usage reporter's retry policy
 * (see the README, "Retries").
 */

/**
 * `Retry-After` in milliseconds from now (RFC 9110: delay-seconds, or an HTTP-date), never
 * negative; undefined when the value is neither.
 */
export function parseRetryAfter(value: string, nowMs = Date.now()): number | undefined {
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP-date starts with its day name (IMF-fixdate, RFC 850 and asctime alike).
  if (!/^[A-Za-z]{3,9},? /.test(text)) return undefined;
  // asctime (`Sun Nov  6 08:49:37 1994`) names no zone: it is UTC, where Date.parse would read
  // the process's local time.
  const at = Date.parse(/^[A-Za-z]{3} /.test(text) ? `${text} GMT` : text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

export interface BackoffPolicy {
  /** The first retry's ceiling; each consecutive failure doubles it. */
  baseDelayMs: number;
  /** The ceiling's ceiling. `Retry-After` may ask for longer and is honoured. */
  maxDelayMs: number;
}

/**
 * The wait before the next attempt after `failures` consecutive failures (1 for the first):
 * exponential with jitter, so that many clients refused together do not come back together.
 * Without `Retry-After`: between half and all of min(max, base x 2^(failures-1)) ("equal
 * jitter": never an immediate retry). With it: never earlier than it asks, plus up to half of
 * the smaller of that ceiling and the asked delay, which spreads the clients over the moment it
 * names. `random` is in [0, 1).
 */
export function retryDelayMs(
  failures: number,
  retryAfterMs: number | undefined,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(failures, 1) - 1, 30);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
  if (retryAfterMs === undefined) return Math.round(ceiling / 2 + (random() * ceiling) / 2);
  return Math.round(retryAfterMs + (random() * Math.min(ceiling, retryAfterMs)) / 2);
}

/** What a whole request's failure means: try it again later, or give its events up. */
export type FailureKind = 'retry' | 'reject';

/**
 * Statuses after which the same request may succeed: a timeout (408), the hourly limit (429) and
 * server-side failures (5xx). Every other 4xx would be answered the same way again.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
