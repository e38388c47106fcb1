/** One identity to reserve: its store key and the pending record to put there if it is free. */
export interface DedupEntry {
  key: string;
  pending: string;
}

export interface Reservation {
  /**
   * The organization's hourly bucket this request counts against, or undefined when the request
   * was counted elsewhere (the api service counts every request before its handler runs) or is a
   * second attempt of one already counted.
   */
  bucket: { key: string; limit: number; ttlSeconds: number } | undefined;
  entries: DedupEntry[];
  /** How long a pending record lives if its owner never commits nor releases it (a crash). */
  pendingTtlSeconds: number;
}

export interface ReservationResult {
  /** Requests counted in the bucket after this one (0 when nothing was counted). */
  count: number;
  /** false: the organization is over its limit; nothing was counted and nothing reserved. */
  allowed: boolean;
  /** Per entry: null when it was free and is now ours (pending), else the record found there. */
  existing: (string | null)[];
}

/**
 * The idempotency store of usage ingest. `reserve` is the hot path: in one atomic step (one Redis
 * round trip) it counts the request against the organization's hourly bucket and SET NX's each
 * identity. A reserved identity is then committed (the log acknowledged the event) or released
 * (it could not be written), each only while the record there is still the caller's own.
 */
export interface UsageDedupStore {
  reserve(reservation: Reservation): Promise<ReservationResult>;
  commit(
    entries: readonly { key: string; pending: string; committed: string }[],
    ttlSeconds: number,
  ): Promise<void>;
  release(entries: readonly DedupEntry[]): Promise<void>;
  get(key: string): Promise<string | null>;
  /** Waits for batched writes still on their way. */
  flush(): Promise<void>;
}
