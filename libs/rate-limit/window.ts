const HOUR_MS = 3_600_000;

/** The fixed window containing `nowMs`: aligned to the top of the UTC hour, not rolling. */
export function hourWindow(nowMs: number): {
  hour: number;
  resetEpochSeconds: number;
  secondsToReset: number;
} {
  const hour = Math.floor(nowMs / HOUR_MS);
  const resetMs = (hour + 1) * HOUR_MS;
  return {
    hour,
    resetEpochSeconds: resetMs / 1000,
    // at least 1: a client told "retry after 0" at 59:59.9 would retry into the same window
    secondsToReset: Math.max(1, Math.ceil((resetMs - nowMs) / 1000)),
  };
}

/** `rl:{org}:{hour}`; one bucket per organization per hour, shared by all its keys and replicas. */
export function bucketKey(prefix: string, orgId: number, hour: number): string {
  return `${prefix}rl:${orgId}:${hour}`;
}

/** Buckets outlive their hour a little so a skewed clock on one replica still finds its bucket. */
export const BUCKET_TTL_SECONDS = 3600 + 300;
