/** One identity to reserve: its store key and the pending record (state P) to put there if it is free. */
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
  /** How long a record lives: IDEMPOTENCY_TTL_DAYS. Only a failed append shortens it (release). */
  ttlSeconds: number;
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
 * The idempotency store of usage ingest. `reserve` is the hot path and the only write a new event
 * costs: in one atomic step (one Redis round trip) it counts the request against the
 * organization's hourly bucket and SET NX's each identity with its pending record. The record
 * stays for the idempotency ttl; it is never rewritten when the log acknowledges the event.
 * A reservation whose event could not be written is released, only while the record there is still
 * the owner's pending one. A request that finds another's pending record adopts it (it will
 * append that same event itself), after which the owner can no longer release it, and commits it
 * once the log acknowledged it, so later repeats answer from the store.
 */
export interface UsageDedupStore {
  reserve(reservation: Reservation): Promise<ReservationResult>;
  /**
   * Puts `next` under `key` for `ttlSeconds` if `expected` is still the record there (a pending
   * record adopted, an adopted one committed). Resolves with the record under `key` now: `next`,
   * another, or null (released).
   */
  replace(key: string, expected: string, next: string, ttlSeconds: number): Promise<string | null>;
  release(entries: readonly DedupEntry[]): Promise<void>;
  get(key: string): Promise<string | null>;
  /** Waits for batched writes still on their way. */
  flush(): Promise<void>;
}
