import type { AuthContext } from '../../auth/index.js';
import { ApiError } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import { ingestEvents } from '../../observability/index.js';
import {
  type RateLimitDecision,
  type RateLimiter,
  rateLimitedError,
  rateLimitHeaders,
} from '../../rate-limit/index.js';
import type { UsageEvent } from '../../schemas/index.js';
import type { CounterChange, DedupEntry, UsageDedupStore } from '../dedup-store/store.js';
import type { UsageEventLog } from '../event-log/log.js';
import type { UsageCounter } from './counter.js';
import {
  decodeDedupRecord,
  dedupKey,
  dedupRecordIn,
  encodeDedupRecord,
  toPublicUsageEvent,
  type UsageEventRecord,
  type UsageIdentity,
} from './event.js';
import { newEventId } from './event-id.js';
import type { ItemLifetime, SubscriptionItemCache } from './items.js';
import { type LingerOptions, ThinTurnLinger } from './linger.js';
import {
  identityOf,
  parseBatchedUsageEvent,
  parseUsageEvent,
  parseUsageEventBatch,
  type ValidUsageEvent,
} from './request.js';

export interface IngestReply<T> {
  value: T;
  /** The rate-limit headers: the core counts every request it sees. */
  headers: Record<string, string>;
}

export interface RecordedEvent {
  event: UsageEvent;
  /** The key had been used before: `event` is the stored one. */
  deduplicated: boolean;
}

/** One event of a batch: the stored event, or the error that event alone would have got. */
export type BatchOutcome = { event: UsageEvent } | { error: ApiError };

export interface UsageIngestOptions {
  store: UsageDedupStore;
  log: UsageEventLog;
  items: Pick<SubscriptionItemCache, 'lifetime' | 'cached' | 'item'>;
  /**
   * The per-item period counters the entitlement check reads: each new event is counted in the
   * reservation itself (docs/decisions.md, "Where the entitlement counter lives and why").
   */
  counter?: UsageCounter;
  /**
   * Decides every request's limit: it counts those that never reach the reservation (invalid
   * ones) itself, and plans the count the reservation makes in the same bucket.
   */
  rateLimiter: RateLimiter;
  /** REDIS_KEY_PREFIX: the rate limiter's buckets and the dedup keys live under it. */
  keyPrefix: string;
  idempotencyTtlSeconds: number;
  logger: Logger;
  /**
   * Holds the reservations of thin turns back for a moment so requests a little apart share a
   * store round trip and a produce call (ThinTurnLinger). Unset: each turn goes on its own.
   */
  linger?: LingerOptions | undefined;
  now?: () => number;
}

/**
 * A duplicate whose first request failed tries once as new; if that attempt fails too (or waits on
 * yet another that fails), the answer is 503. While the log is down this keeps every request's
 * answer within a few produce timeouts (attempts x MAX_RESOLVE_STEPS at most), never an endless chain.
 */
const MAX_ATTEMPTS = 2;
/** Records a duplicate follows (awaited, adopted, read again) before it gives up with 503. */
const MAX_RESOLVE_STEPS = 4;

interface Resolved {
  record: UsageEventRecord;
  deduplicated: boolean;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/**
 * The ingest core both HTTP front ends call (docs/architecture.md, "The shape" and "Rules of the contract"). Per request: validate, resolve the
 * idempotency key, check the item through a cache, then ONE store round trip that counts the
 * request and reserves each event's identity (SET NX of the event). New events go to the log and
 * are answered only once the log acknowledged them; that is the only store write a new event
 * costs. A repeated key gets the event recorded under it, durable before it is answered: when that
 * event's request runs in this process, the duplicate waits for it; otherwise (another process, a
 * retry after the first answer, an owner that died) the duplicate adopts the record and appends
 * that same event to the log itself. Appending one event twice is harmless, since the sinks keep
 * one row per identity, and every answer for an identity carries the same event. When the store or
 * the log fails, the owner releases its reservation unless it was adopted, and answers 503; the
 * client's retry starts afresh, or completes the adopted event.
 */
export class UsageIngest {
  private readonly now: () => number;
  /**
   * Events of this process between reservation and the log's answer, by event id; a waiter is
   * made only when a duplicate in this process comes to wait (null until then).
   */
  private readonly inFlight = new Map<string, Deferred<UsageEventRecord> | null>();
  private readonly linger: ThinTurnLinger | undefined;

  constructor(private readonly options: UsageIngestOptions) {
    this.now = options.now ?? Date.now;
    this.linger = options.linger ? new ThinTurnLinger(options.linger) : undefined;
  }

  /**
   * POST /usage/events. Counts the request against the organization's hourly bucket, whatever the
   * outcome; throws ApiError carrying the rate-limit headers once the request was counted.
   */
  async recordEvent(
    auth: AuthContext,
    input: { body: unknown; idempotencyKey: string | undefined },
  ): Promise<IngestReply<RecordedEvent>> {
    const receivedAtMs = this.now();
    let candidate: UsageEventRecord;
    try {
      const valid = parseUsageEvent(input.body, input.idempotencyKey, receivedAtMs);
      await this.checkItem(auth.orgId, valid);
      candidate = this.candidate(auth.orgId, valid, receivedAtMs);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'VALIDATION_ERROR') {
        return this.storedOrRefuse(auth, input, error);
      }
      return this.refuse(auth, error);
    }
    const { decision, resolved } = await this.recordCounted(auth, [candidate]);
    const [outcome] = resolved;
    countOutcome(outcome!.deduplicated ? DEDUPLICATED : ACCEPTED);
    return {
      value: { event: toPublicUsageEvent(outcome!.record), deduplicated: outcome!.deduplicated },
      headers: rateLimitHeaders(decision),
    };
  }

  /**
   * POST /usage/events/batch: up to 1000 events, ONE request against the hourly limit. Outcomes in
   * request order. A failure of the store or the log fails the whole batch (503), nothing half
   * recorded: the client retries it whole, and events already recorded come back as stored.
   */
  async recordBatch(auth: AuthContext, body: unknown): Promise<IngestReply<BatchOutcome[]>> {
    const receivedAtMs = this.now();
    let events: unknown[];
    try {
      events = parseUsageEventBatch(body);
    } catch (error) {
      return this.refuse(auth, error);
    }
    const outcomes: BatchOutcome[] = new Array(events.length);
    const candidates: (UsageEventRecord | undefined)[] = new Array(events.length);
    // Items known to the cache are checked without waiting; the others are looked up together.
    const lookups: Promise<void>[] = [];
    const check = (index: number, valid: ValidUsageEvent, lifetime: ItemLifetime) => {
      const problem = itemProblem(valid, lifetime);
      if (problem) {
        countOutcome(rejected(problem.code));
        outcomes[index] = { error: problem };
      } else {
        candidates[index] = this.candidate(auth.orgId, valid, receivedAtMs);
      }
    };
    for (let index = 0; index < events.length; index++) {
      let valid: ValidUsageEvent;
      try {
        valid = parseBatchedUsageEvent(events[index], receivedAtMs);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        countOutcome(rejected(error.code));
        outcomes[index] = { error };
        continue;
      }
      const known = this.options.items.cached(auth.orgId, valid.subscriptionItemId);
      if (known) check(index, valid, known);
      else {
        lookups.push(
          this.lifetimeOf(auth.orgId, valid.subscriptionItemId).then((lifetime) =>
            check(index, valid, lifetime),
          ),
        );
      }
    }
    if (lookups.length) await Promise.all(lookups).catch((error) => this.refuse(auth, error));

    const positions: number[] = [];
    const valid: UsageEventRecord[] = [];
    candidates.forEach((candidate, index) => {
      if (candidate) {
        positions.push(index);
        valid.push(candidate);
      }
    });
    let decision: RateLimitDecision;
    if (valid.length) {
      const recorded = await this.recordCounted(auth, valid);
      decision = recorded.decision;
      let repeats = 0;
      recorded.resolved.forEach((outcome, i) => {
        if (outcome.deduplicated) repeats++;
        outcomes[positions[i]!] = { event: toPublicUsageEvent(outcome.record) };
      });
      // Counted once per batch: prom-client hashes the labels on every call.
      if (repeats) DEDUPLICATED.inc(repeats);
      if (valid.length > repeats) ACCEPTED.inc(valid.length - repeats);
    } else {
      decision = await this.countOnly(auth);
    }
    return { value: outcomes, headers: rateLimitHeaders(decision) };
  }

  /**
   * For a request the transport refused before the core saw its events (malformed JSON, wrong media
   * type, too large): it still counts, whatever its status. Throws `error` with the rate-limit headers.
   */
  async refuse(auth: AuthContext, error: unknown): Promise<never> {
    if (!(error instanceof ApiError)) throw error;
    countOutcome(rejected(error.code));
    const decision = await this.countOnly(auth);
    throw withHeaders(error, rateLimitHeaders(decision));
  }

  /**
   * An invalid body whose item and key name an identity already recorded: the stored event, with
   * 201, "whatever the new body says" (docs/architecture.md, "Rules of the contract"). Otherwise the body's error. Counted either way.
   */
  private async storedOrRefuse(
    auth: AuthContext,
    input: { body: unknown; idempotencyKey: string | undefined },
    invalid: ApiError,
  ): Promise<IngestReply<RecordedEvent>> {
    const identity = identityOf(input.body, input.idempotencyKey);
    if (!identity) return this.refuse(auth, invalid);
    const decision = await this.countOnly(auth);
    const headers = rateLimitHeaders(decision);
    const key = dedupKey(
      this.options.keyPrefix,
      auth.orgId,
      identity.subscriptionItemId,
      identity.idempotencyKey,
    );
    let record: UsageEventRecord | null;
    try {
      const found = await this.read(key);
      record =
        found === null
          ? await this.storedInLog({ orgId: auth.orgId, ...identity })
          : await this.resolvedRecord(key, found, { orgId: auth.orgId, ...identity });
    } catch (error) {
      const refusal = withHeaders(asApiError(error), headers);
      countOutcome(rejected(refusal.code));
      throw refusal;
    }
    if (!record) {
      countOutcome(rejected(invalid.code));
      throw withHeaders(invalid, headers);
    }
    countOutcome(DEDUPLICATED);
    return { value: { event: toPublicUsageEvent(record), deduplicated: true }, headers };
  }

  /** The event the log holds for an identity the store does not know (e.g. forgotten at a restart). */
  private async storedInLog(identity: UsageIdentity): Promise<UsageEventRecord | null> {
    if (!this.options.log.stored) return null;
    try {
      return await this.options.log.stored(identity);
    } catch (cause) {
      throw unavailable('The database is unavailable.', cause);
    }
  }

  /** Waits for reservations and releases still on their way to the store (at shutdown). */
  async drain(): Promise<void> {
    await this.options.store.flush();
  }

  private async countOnly(auth: AuthContext): Promise<RateLimitDecision> {
    let decision: RateLimitDecision;
    try {
      decision = await this.options.rateLimiter.consume(auth);
    } catch (cause) {
      throw unavailable('The rate-limit store is unavailable.', cause);
    }
    if (!decision.allowed) throw withHeaders(rateLimitedError(decision), rateLimitHeaders(decision));
    return decision;
  }

  private async checkItem(orgId: number, valid: ValidUsageEvent): Promise<void> {
    const known = this.options.items.cached(orgId, valid.subscriptionItemId);
    const problem = itemProblem(valid, known ?? (await this.lifetimeOf(orgId, valid.subscriptionItemId)));
    if (problem) throw problem;
  }

  private async lifetimeOf(orgId: number, subscriptionItemId: number): Promise<ItemLifetime> {
    try {
      return await this.options.items.lifetime(orgId, subscriptionItemId);
    } catch (cause) {
      throw unavailable('The database is unavailable.', cause);
    }
  }

  private candidate(orgId: number, valid: ValidUsageEvent, receivedAtMs: number): UsageEventRecord {
    return {
      id: newEventId(receivedAtMs),
      orgId,
      subscriptionItemId: valid.subscriptionItemId,
      idempotencyKey: valid.idempotencyKey,
      quantity: valid.quantity,
      occurredAtMs: valid.occurredAtMs,
      recordedAtMs: receivedAtMs,
    };
  }

  /** `record` for a request seen for the first time: counted, and its rejections counted too. */
  private async recordCounted(
    auth: AuthContext,
    candidates: UsageEventRecord[],
  ): Promise<{ decision: RateLimitDecision; resolved: Resolved[] }> {
    const { linger } = this;
    linger?.enter();
    try {
      const held = linger?.hold(candidates.length);
      if (held) await held;
      const { decision, resolved } = await this.record(auth, candidates, { countRequest: true });
      return { decision: decision!, resolved };
    } catch (error) {
      rejected(error instanceof ApiError ? error.code : 'INTERNAL_SERVER_ERROR').inc(candidates.length);
      throw error;
    } finally {
      linger?.leave();
    }
  }

  /**
   * Reserves, appends the new events, resolves the duplicates. Throws ApiError 429 or 503.
   */
  private async record(
    auth: AuthContext,
    candidates: UsageEventRecord[],
    how: {
      /** Count the request in the reservation; false for a retry of one already counted. */
      countRequest: boolean;
      /** 2 when a duplicate proceeds as new after the first request with its key failed. */
      attempt?: number;
    },
  ): Promise<{ decision: RateLimitDecision | undefined; resolved: Resolved[] }> {
    const attempt = how.attempt ?? 1;
    const { keyPrefix } = this.options;
    // without waiting when the cache knows every item (the hot path)
    let counters = this.counterChanges(candidates);
    if (counters instanceof Promise) counters = await counters;
    const entries: DedupEntry[] = candidates.map((candidate, i) => {
      const entry: DedupEntry = {
        key: dedupKey(keyPrefix, candidate.orgId, candidate.subscriptionItemId, candidate.idempotencyKey),
        pending: encodeDedupRecord('pending', candidate),
      };
      const counter = counters?.[i];
      if (counter) entry.counter = counter;
      return entry;
    });
    // Known before the reservation: a duplicate in this process that finds our pending record
    // must find us here, even if its reply from the store arrives first.
    for (const candidate of candidates) this.inFlight.set(candidate.id, null);

    const planned = how.countRequest ? this.options.rateLimiter.plan(auth) : undefined;
    let reservation: Awaited<ReturnType<UsageDedupStore['reserve']>>;
    try {
      reservation = await this.options.store.reserve({
        bucket: planned?.bucket,
        entries,
        ttlSeconds: this.options.idempotencyTtlSeconds,
      });
    } catch (cause) {
      for (const candidate of candidates) this.inFlight.delete(candidate.id);
      throw unavailable('The idempotency store is unavailable.', cause);
    }
    const decision = planned && this.options.rateLimiter.decide(planned, reservation);
    // for the failures only: a success's caller writes them once
    const headers = () => (decision ? rateLimitHeaders(decision) : {});
    if (!reservation.allowed) {
      for (const candidate of candidates) this.inFlight.delete(candidate.id);
      throw withHeaders(rateLimitedError(decision!), headers());
    }

    const fresh: number[] = [];
    const duplicates: number[] = [];
    reservation.existing.forEach((existing, i) => {
      if (existing === null) fresh.push(i);
      else {
        this.inFlight.delete(candidates[i]!.id);
        duplicates.push(i);
      }
    });
    const resolved: Resolved[] = new Array(candidates.length);
    if (!duplicates.length) {
      // The common case: every event is new.
      try {
        const stored = await this.append(candidates, entries);
        for (let i = 0; i < stored.length; i++) {
          resolved[i] = { record: stored[i]!, deduplicated: stored[i]!.id !== candidates[i]!.id };
        }
      } catch (error) {
        throw withHeaders(asApiError(error), headers());
      }
      return { decision, resolved };
    }
    const work: Promise<void>[] = [];
    if (fresh.length) {
      work.push(
        this.append(
          fresh.map((i) => candidates[i]!),
          fresh.map((i) => entries[i]!),
        ).then((stored) => {
          fresh.forEach((i, at) => {
            resolved[i] = { record: stored[at]!, deduplicated: stored[at]!.id !== candidates[i]!.id };
          });
        }),
      );
    }
    for (const i of duplicates) {
      work.push(
        this.resolveDuplicate(auth, candidates[i]!, entries[i]!.key, reservation.existing[i]!, attempt).then(
          (outcome) => {
            resolved[i] = outcome;
          },
        ),
      );
    }
    const results = await Promise.allSettled(work);
    const failure = results.find((result) => result.status === 'rejected');
    if (failure) throw withHeaders(asApiError(failure.reason), headers());
    return { decision, resolved };
  }

  /**
   * The counter each event counts in if it is new: its item's period at its timestamp. The item's
   * schedule is in the cache the item check just filled; one evicted since is read again.
   */
  private counterChanges(
    candidates: readonly UsageEventRecord[],
  ): (CounterChange | undefined)[] | undefined | Promise<(CounterChange | undefined)[]> {
    const { counter, items } = this.options;
    if (!counter?.enabled) return undefined;
    const changes: (CounterChange | undefined)[] = new Array(candidates.length);
    let missing: Promise<void>[] | undefined;
    candidates.forEach((candidate, i) => {
      const schedule = items.cached(candidate.orgId, candidate.subscriptionItemId)?.schedule;
      if (schedule) changes[i] = counter.eventChange(candidate, schedule);
      else {
        missing ??= [];
        missing.push(
          items.item(candidate.orgId, candidate.subscriptionItemId).then((item) => {
            if (item) changes[i] = counter.eventChange(candidate, item.schedule);
          }),
        );
      }
    });
    if (!missing) return changes;
    return Promise.all(missing).then(
      () => changes,
      (cause) => {
        throw unavailable('The database is unavailable.', cause);
      },
    );
  }

  /** Appends new events; answers with the stored ones, or releases the identities and throws 503. */
  private append(events: UsageEventRecord[], entries: DedupEntry[]): Promise<UsageEventRecord[]> {
    return this.appendToLog(events, async () => {
      // Released before anyone hears of the failure, so the client's retry finds the key free
      // (unless a duplicate adopted it meanwhile: then the retry completes that event).
      await this.options.store.release(entries).catch((error) => {
        this.options.logger.warn({ err: error }, 'could not release usage idempotency keys');
      });
    });
  }

  /**
   * The log's answer for `events`, which are this process's in-flight events until it comes (a
   * duplicate here waits for it instead of appending again). On failure, `beforeFailing` runs
   * before anyone hears of it, then 503.
   */
  private async appendToLog(
    events: UsageEventRecord[],
    beforeFailing?: () => Promise<void>,
  ): Promise<UsageEventRecord[]> {
    let stored: UsageEventRecord[];
    try {
      stored = await this.options.log.append(events);
    } catch (cause) {
      await beforeFailing?.();
      for (const event of events) this.finishInFlight(event.id, { error: cause });
      throw unavailable('The usage log is unavailable.', cause);
    }
    for (let i = 0; i < events.length; i++) this.finishInFlight(events[i]!.id, { stored: stored[i]! });
    return stored;
  }

  /** A duplicate: the stored event once it is durable, or a new attempt if the first one failed. */
  private async resolveDuplicate(
    auth: AuthContext,
    candidate: UsageEventRecord,
    key: string,
    found: string,
    attempt: number,
  ): Promise<Resolved> {
    const record = await this.resolvedRecord(key, found, candidate);
    if (record) return { record, deduplicated: true };
    // The first request failed and released the key: this one proceeds as new (counted already).
    if (attempt >= MAX_ATTEMPTS) throw unavailable('The usage event could not be recorded; retry.');
    const retried = await this.record(auth, [{ ...candidate, id: newEventId(candidate.recordedAtMs) }], {
      countRequest: false,
      attempt: attempt + 1,
    });
    return retried.resolved[0]!;
  }

  /**
   * The event recorded under an identity found in the store, once durable. One of this process
   * still on its way to the log is awaited. Any other is adopted, so its owner can no longer
   * release it, and appended again by this request. Null when the key is free (the first request
   * failed and released it). Throws 503 when the log fails.
   */
  private async resolvedRecord(
    key: string,
    found: string,
    identity: Pick<UsageEventRecord, 'orgId' | 'subscriptionItemId' | 'idempotencyKey'>,
  ): Promise<UsageEventRecord | null> {
    let current: string | null = found;
    for (let step = 0; ; step++) {
      if (current === null) return null;
      const { state, record } = decodeDedupRecord(current, identity);
      if (state === 'committed') return record;
      if (step >= MAX_RESOLVE_STEPS) throw unavailable('The usage event could not be recorded; retry.');
      const local = this.waiterFor(record.id);
      if (local) {
        try {
          return await local.promise;
        } catch {
          // It failed here; its key is released, or was adopted. Read it again.
          current = await this.read(key);
          continue;
        }
      }
      const { idempotencyTtlSeconds } = this.options;
      if (state === 'pending') {
        // Adopted (by this request or another), released, or replaced: follow what is there now.
        try {
          current = await this.options.store.replace(
            key,
            current,
            dedupRecordIn('adopted', current),
            idempotencyTtlSeconds,
          );
        } catch (cause) {
          throw unavailable('The idempotency store is unavailable.', cause);
        }
        continue;
      }
      // Adopted, and nobody here is appending it: this request does, and others here wait for it.
      this.inFlight.set(record.id, null);
      const [stored] = await this.appendToLog([record]);
      // Durable: later repeats answer from the store instead of appending it again.
      this.options.store
        .replace(key, current, dedupRecordIn('committed', current), idempotencyTtlSeconds)
        .catch((error) => {
          this.options.logger.warn({ err: error }, 'could not commit a usage idempotency key');
        });
      return stored!;
    }
  }

  private async read(key: string): Promise<string | null> {
    try {
      return await this.options.store.get(key);
    } catch (cause) {
      throw unavailable('The idempotency store is unavailable.', cause);
    }
  }

  /** A promise of the outcome of an event of this process still on its way to the log. */
  private waiterFor(id: string): Deferred<UsageEventRecord> | undefined {
    const waiter = this.inFlight.get(id);
    if (waiter !== null) return waiter;
    // null: in flight, nobody waiting yet.
    const created = deferred<UsageEventRecord>();
    this.inFlight.set(id, created);
    return created;
  }

  private finishInFlight(id: string, result: { stored: UsageEventRecord } | { error: unknown }): void {
    const waiting = this.inFlight.get(id);
    this.inFlight.delete(id);
    if (!waiting) return;
    if ('stored' in result) waiting.resolve(result.stored);
    else waiting.reject(result.error);
  }
}

/**
 * Why usage cannot be recorded for this item: unknown here (404), not metered (400), or dated
 * outside the item's lifetime, before it started or once a change removed it (422 on timestamp:
 * no period would ever count it; docs/decisions.md "Usage outside its item's lifetime is refused").
 */
function itemProblem(valid: ValidUsageEvent, lifetime: ItemLifetime): ApiError | undefined {
  const id = valid.subscriptionItemId;
  if (lifetime.usageType === undefined) return ApiError.notFound(`Subscription item ${id}`);
  if (lifetime.usageType !== 'metered') {
    return ApiError.badRequest(
      `Subscription item ${id} is not metered; usage can only be reported for metered items.`,
    );
  }
  if (lifetime.startedAtMs !== undefined && valid.occurredAtMs < lifetime.startedAtMs) {
    return ApiError.validation([
      {
        field: 'timestamp',
        message: `Is before subscription item ${id} started (${new Date(lifetime.startedAtMs).toISOString()}); no period would count it.`,
        code: 'out_of_range',
      },
    ]);
  }
  if (lifetime.removedAtMs !== undefined && valid.occurredAtMs >= lifetime.removedAtMs) {
    return ApiError.validation([
      {
        field: 'timestamp',
        message: `Is at or after subscription item ${id} was removed (${new Date(lifetime.removedAtMs).toISOString()}); no period would count it.`,
        code: 'out_of_range',
      },
    ]);
  }
  return undefined;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Nobody may be waiting when it fails; that is not an unhandled rejection.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

function unavailable(detail: string, cause?: unknown): ApiError {
  return ApiError.serviceUnavailable(detail, 1, cause);
}

function asApiError(error: unknown): ApiError {
  return error instanceof ApiError
    ? error
    : unavailable('The usage event could not be recorded; retry.', error);
}

/** The same error with more headers (the rate-limit headers every authenticated answer carries). */
function withHeaders(error: ApiError, headers: Record<string, string>): ApiError {
  return new ApiError(error.code, error.message, {
    ...(error.details ? { details: error.details } : {}),
    headers: { ...headers, ...error.headers },
    cause: error.cause,
    expected: error.expected,
  });
}

const ACCEPTED = ingestEvents.labels('accepted', '');
const DEDUPLICATED = ingestEvents.labels('deduplicated', '');
const REJECTED = new Map<string, ReturnType<typeof ingestEvents.labels>>();

function rejected(reason: string): ReturnType<typeof ingestEvents.labels> {
  let counter = REJECTED.get(reason);
  if (!counter) {
    counter = ingestEvents.labels('rejected', reason);
    REJECTED.set(reason, counter);
  }
  return counter;
}

function countOutcome(counter: ReturnType<typeof ingestEvents.labels>): void {
  counter.inc();
}
