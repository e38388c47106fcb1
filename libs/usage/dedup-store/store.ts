/** One identity to reserve: its store key and the pending record (state P) to put there if it is free. */
export interface DedupEntry {
  key: string;
  pending: string;
  /** The period counter the event counts in when it is new (domain/counter.ts); none: not counted. */
  counter?: CounterChange;
}

/**
 * A change of an item's period counter: its key, the quantity as whole units and 1e-8ths (each
 * fits Redis' 64-bit HINCRBY), and the journal field naming it while the counter is rebuilt
 * (`e:<idempotency key>` for an event, `v:<event id>` for a void).
 */
export interface CounterChange {
  key: string;
  whole: string;
  fraction: string;
  field: string;
}

/** A counter as stored: `base` set once rebuilt (then used = base + delta), a lease while rebuilding. */
export interface CounterState {
  base: string | null;
  /** The delta since the rebuild's cut, whole units and 1e-8ths. */
  whole: bigint;
  fraction: bigint;
  /** `token|deadline ms` of the rebuild under way, if any. */
  lease: string | null;
}

/** An organization's hourly bucket a request counts against (libs/rate-limit's PlannedCount bucket). */
export interface CountedBucket {
  key: string;
  limit: number;
  ttlSeconds: number;
}

/** The request's count (this one included, when allowed) and the counters read with it. */
export interface CountedRead {
  count: number;
  allowed: boolean;
  states: CounterState[];
}

/** The changes counted since a rebuild's cut, and how many there were (a later change moves it). */
export interface CounterJournal {
  count: string;
  /** field -> `whole:fraction` of the change (signed). */
  entries: Map<string, string>;
}

/**
 * The per-item period counters the entitlement check reads (docs/decisions.md, "Where the
 * entitlement counter lives and why"), kept by the same store as the idempotency keys: an event is
 * counted in the very step that finds it new (`reserve`), uncounted when its reservation is
 * released, and a void subtracts it. A counter that is missing is rebuilt (domain/counter.ts):
 * `beginRebuild` cuts it (delta 0, a journal of every later change), the caller sums the stored
 * events and what of the journal they reflect, and `finishRebuild` sets the base under its lease.
 */
export interface UsageCounterStore {
  readCounters(keys: readonly string[]): Promise<CounterState[]>;
  /**
   * readCounters that also counts one request against `bucket` (an organization's hourly bucket, the
   * rule every route counts with) in the same atomic step: the entitlement check's one round trip
   * (docs/decisions.md, "The entitlement check's round trips"). A refused request is not counted;
   * its counters are read all the same.
   */
  readCountersCounting(keys: readonly string[], bucket: CountedBucket): Promise<CountedRead>;
  adjustCounter(change: CounterChange): Promise<void>;
  /** 'ready': it has a base; 'building': another rebuild holds a live lease; 'started': ours. */
  beginRebuild(
    key: string,
    token: string,
    deadlineMs: number,
    nowMs: number,
  ): Promise<'ready' | 'building' | 'started'>;
  readJournal(key: string): Promise<CounterJournal>;
  /** 'done': base set; 'lost': not our lease (it lapsed and another took it over). */
  finishRebuild(key: string, token: string, base: string): Promise<'done' | 'lost'>;
  /** Gives up our rebuild (it failed): the lease and journal go, the next reader cuts again. */
  abandonRebuild(key: string, token: string): Promise<void>;
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
export interface UsageDedupStore extends UsageCounterStore {
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
