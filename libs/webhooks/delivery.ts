import type { Queryable } from '../db/index.js';
import { deliveryHeaders, type SignatureKeyIds } from './payload.js';
import { type AfterFailure, afterFailedAttempt } from './retry-schedule.js';
import { keyIdsMemo, type SigningSecret } from './signing.js';
import type { AttemptOutcome, WebhookSender } from './webhook-sender.js';

/*
 * One delivery attempt moves through explicit states, each with its own handler:
 *
 *   pending --attempt()--> attempted --judge()--> succeeded | failed
 *      \--(endpoint disabled or deleted meanwhile)--> undeliverable
 *
 * "pending" is a claimed webhook event: due, and leased to this dispatcher by moving its
 * next_attempt_at past the attempt's longest possible duration BEFORE the HTTP call. Another
 * dispatcher skips it until the lease ends, so no attempt is made twice; a dispatcher that dies
 * mid-attempt leaves the lease to expire, and the attempt is made again (never lost). The lease
 * value is also the token the recording handlers check: a dispatcher whose lease was taken over
 * (or reset by a manual retry) records nothing.
 */

export interface PendingDelivery {
  kind: 'pending';
  eventId: string;
  orgId: number;
  endpointId: string;
  eventType: string;
  /** The exact bytes to send, stored when the event was created. */
  payload: string;
  /** The number of the attempt to make (1-based). */
  attempt: number;
  maxAttempts: number;
  /** The first attempt of the event's current series (1, or where a recovery started one). */
  seriesFirstAttempt: number;
  /** next_attempt_at as set by the claim, in Postgres' own text form (microseconds kept). */
  lease: string;
  endpoint: {
    url: string;
    secret: SigningSecret;
    /** The secret before the last rotation, which signs too until it expires. */
    previousSecret?: SigningSecret & { expiresAt: Date };
    deliverable: boolean;
    why?: string;
  };
}

export interface AttemptedDelivery {
  kind: 'attempted';
  pending: PendingDelivery;
  attemptedAt: Date;
  /** Which secrets signed the request. */
  keyIds: SignatureKeyIds;
  outcome: AttemptOutcome;
}

export interface SucceededDelivery {
  kind: 'succeeded';
  attempted: AttemptedDelivery;
}

export interface FailedDelivery {
  kind: 'failed';
  attempted: AttemptedDelivery;
  next: AfterFailure;
}

export interface UndeliverableDelivery {
  kind: 'undeliverable';
  pending: PendingDelivery;
  reason: string;
}

/**
 * NOTIFYed when an event becomes due outside the dispatcher's own schedule (a manual retry), so a
 * listening dispatcher claims it at once instead of at its next poll.
 */
export const WEBHOOK_EVENT_DUE_CHANNEL = 'webhook_event_due';

/**
 * An event sent again (recover, manual retry: `ordered`) waits while an earlier ordered event of
 * its endpoint is still PENDING or RETRYING, in flight or between its attempts: ordered events of
 * one endpoint go out one at a time, in order of occurrence (outbox_id: the order the domain
 * events were emitted in, also within one transaction; then id). Each attempt's end unblocks the
 * next by the event's own status, so no path that ends an event has to hand over to the next.
 * `w` is the event's alias in the query.
 */
export const WAITS_ITS_TURN = `w.ordered AND EXISTS (
  SELECT 1 FROM webhook_events earlier
   WHERE earlier.endpoint_id = w.endpoint_id AND earlier.ordered
     AND earlier.status IN ('PENDING', 'RETRYING')
     AND (earlier.outbox_id, earlier.id) < (w.outbox_id, w.id))`;

interface ClaimedRow {
  id: string;
  org_id: number;
  endpoint_id: string;
  event_type: string;
  payload: string;
  attempts: number;
  max_attempts: number;
  series_first_attempt: number;
  lease: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  endpoint_status: string;
  endpoint_deleted: boolean;
}

/**
 * Claims up to `limit` due events and leases them for `leaseMs`, in one statement. No endpoint
 * gets more than `perEndpoint` attempts at once (counting `busy`, the attempts this dispatcher has
 * under way per endpoint): an endpoint that hangs until the timeout, with thousands of events due,
 * holds a few slots, and every other endpoint's events go out meanwhile. Endpoints take turns by
 * due time, and within one endpoint events go out in order. An endpoint at its limit is skipped
 * before the look-ahead window (4 x `limit` due events) is taken, so its backlog hides nobody's.
 */
export async function claimDueDeliveries(
  db: Queryable,
  limit: number,
  leaseMs: number,
  fairness: { perEndpoint: number; busy: ReadonlyMap<string, number> },
): Promise<PendingDelivery[]> {
  const { rows } = await db.query<ClaimedRow>(
    `WITH busy AS (
       SELECT * FROM unnest($3::uuid[], $4::int[]) AS b (endpoint_id, attempting)
     ),
     candidates AS (
       SELECT id, endpoint_id, next_attempt_at FROM webhook_events w
       WHERE status IN ('PENDING', 'RETRYING') AND next_attempt_at <= now()
         AND endpoint_id NOT IN (SELECT endpoint_id FROM busy WHERE attempting >= $5)
         AND NOT (${WAITS_ITS_TURN})
       ORDER BY next_attempt_at
       LIMIT $1 * 4
     ),
     ranked AS (
       SELECT c.id, c.next_attempt_at,
         row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at) AS turn,
         $5 - coalesce(b.attempting, 0) AS room
       FROM candidates c LEFT JOIN busy b USING (endpoint_id)
     ),
     due AS (
       SELECT w.id FROM webhook_events w JOIN ranked r ON r.id = w.id
       WHERE r.turn <= r.room AND w.status IN ('PENDING', 'RETRYING') AND w.next_attempt_at <= now()
       ORDER BY r.next_attempt_at
       LIMIT $1
       FOR UPDATE OF w SKIP LOCKED
     )
     UPDATE webhook_events e SET next_attempt_at = now() + $2::double precision * interval '1 millisecond'
     FROM due, webhook_endpoints ep
     WHERE e.id = due.id AND ep.org_id = e.org_id AND ep.id = e.endpoint_id
     RETURNING e.id, e.org_id, e.endpoint_id, e.event_type, e.payload, e.attempts, e.max_attempts,
       e.series_first_attempt, e.next_attempt_at::text AS lease, ep.url, ep.secret, ep.previous_secret,
       ep.previous_secret_expires_at, ep.status AS endpoint_status, ep.deleted_at IS NOT NULL AS endpoint_deleted`,
    [limit, leaseMs, [...fairness.busy.keys()], [...fairness.busy.values()], fairness.perEndpoint],
  );
  const named = keyIdsMemo();
  return rows.map((row) => ({
    kind: 'pending',
    eventId: row.id,
    orgId: row.org_id,
    endpointId: row.endpoint_id,
    eventType: row.event_type,
    payload: row.payload,
    attempt: row.attempts + 1,
    maxAttempts: row.max_attempts,
    seriesFirstAttempt: row.series_first_attempt,
    lease: row.lease,
    endpoint: {
      url: row.url,
      secret: named(row.secret),
      ...(row.previous_secret && row.previous_secret_expires_at
        ? { previousSecret: { ...named(row.previous_secret), expiresAt: row.previous_secret_expires_at } }
        : {}),
      deliverable: !row.endpoint_deleted && row.endpoint_status === 'ACTIVE',
      ...(row.endpoint_deleted
        ? { why: 'Not delivered: the endpoint was deleted.' }
        : row.endpoint_status !== 'ACTIVE'
          ? { why: 'Not delivered: the endpoint was disabled.' }
          : {}),
    },
  }));
}

/**
 * pending -> attempted: one POST of the stored payload, signed at `attemptedAt` (its
 * webhook-timestamp: each attempt has its own) with the current secret, and with the previous
 * one too while it has not expired by then.
 */
export async function attempt(
  pending: PendingDelivery,
  sender: WebhookSender,
  attemptedAt: Date,
): Promise<AttemptedDelivery> {
  const { secret, previousSecret } = pending.endpoint;
  const { headers, keyIds } = deliveryHeaders({
    deliveryId: pending.eventId,
    type: pending.eventType,
    payload: pending.payload,
    timestamp: Math.floor(attemptedAt.getTime() / 1000),
    secrets: {
      current: secret,
      previous: previousSecret && previousSecret.expiresAt > attemptedAt ? previousSecret : undefined,
    },
  });
  const outcome = await sender.send({ url: pending.endpoint.url, body: pending.payload, headers });
  return { kind: 'attempted', pending, attemptedAt, keyIds, outcome };
}

/** attempted -> succeeded | failed: any 2xx succeeds; everything else (3xx included) fails. */
export function judge(
  attempted: AttemptedDelivery,
  retryDelaysMs: readonly number[],
): SucceededDelivery | FailedDelivery {
  if (attempted.outcome.result === 'success') return { kind: 'succeeded', attempted };
  const { attempt: number, maxAttempts, seriesFirstAttempt } = attempted.pending;
  const next = afterFailedAttempt({ number, maxAttempts, seriesFirstAttempt }, retryDelaysMs);
  return { kind: 'failed', attempted, next };
}

/**
 * Records finished attempts, each with its event's new state, in ONE statement (atomic), each only
 * while this dispatcher still holds its lease. Returns the ids of the events recorded; one missing
 * lost its lease (taken over, or reset by a manual retry), and whoever holds it makes the attempt
 * again: at-least-once. Handles both final states: succeeded -> SUCCESS, failed -> RETRYING (due
 * after its delay, on the database clock) or FAILED.
 *
 * One exception to the lease: an event ended FAILED without an attempt while this one was in
 * flight (its endpoint disabled or deleted) still gets the attempt in its history and count, since
 * the receiver got the request; it stays FAILED with the reason it ended, and is not revived.
 */
export async function recordAttempts(
  db: Queryable,
  finished: readonly (SucceededDelivery | FailedDelivery)[],
): Promise<Set<string>> {
  if (!finished.length) return new Set();
  const columns = {
    id: [] as string[],
    lease: [] as string[],
    attempt: [] as number[],
    status: [] as string[],
    attemptedAt: [] as Date[],
    code: [] as number[],
    body: [] as (string | null)[],
    delayMs: [] as (number | null)[],
    durationMs: [] as number[],
    serviceKeyId: [] as string[],
    // space-separated: unnest cannot take an array of arrays of different lengths
    standardKeyIds: [] as string[],
  };
  for (const delivery of finished) {
    const { pending, outcome, attemptedAt, keyIds } = delivery.attempted;
    const next = delivery.kind === 'succeeded' ? undefined : delivery.next;
    columns.id.push(pending.eventId);
    columns.lease.push(pending.lease);
    columns.attempt.push(pending.attempt);
    columns.status.push(next ? next.status : 'SUCCESS');
    columns.attemptedAt.push(attemptedAt);
    columns.code.push(outcome.responseCode);
    columns.body.push(outcome.responseBody);
    columns.delayMs.push(next?.status === 'RETRYING' ? next.delayMs : null);
    columns.durationMs.push(outcome.durationMs);
    columns.serviceKeyId.push(keyIds.service);
    columns.standardKeyIds.push(keyIds.standard.join(' '));
  }
  const { rows } = await db.query<{ id: string }>(
    `WITH input AS (
       SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::int[], $4::text[], $5::timestamptz[],
                            $6::int[], $7::text[], $8::float8[], $9::int[], $10::text[], $11::text[])
         AS t (id, lease, attempt, status, attempted_at, code, body, delay_ms, duration_ms,
               service_key_id, standard_key_ids)
     ), updated AS (
       UPDATE webhook_events e SET
         status = CASE WHEN e.status = 'FAILED' THEN e.status ELSE i.status END,
         attempts = i.attempt,
         next_attempt_at = CASE WHEN e.status <> 'FAILED' AND i.status = 'RETRYING'
           THEN now() + i.delay_ms * interval '1 millisecond' END,
         last_attempt_at = i.attempted_at, last_response_code = i.code,
         last_response_body = CASE WHEN e.status = 'FAILED' THEN e.last_response_body ELSE i.body END,
         updated_at = now()
       FROM input i
       WHERE e.id = i.id AND e.attempts = i.attempt - 1
         AND ((e.next_attempt_at = i.lease AND e.status IN ('PENDING', 'RETRYING'))
           OR (e.status = 'FAILED' AND e.next_attempt_at IS NULL))
       RETURNING e.id, e.org_id, i.attempt, i.attempted_at, i.code, i.duration_ms, i.body,
         i.service_key_id, i.standard_key_ids
     )
     INSERT INTO webhook_attempts (org_id, webhook_event_id, attempt, attempted_at, response_code, duration_ms,
                                   response_body, service_signature_key_id, standard_signature_key_ids)
     SELECT org_id, id, attempt, attempted_at, code, duration_ms, body, service_key_id,
       string_to_array(standard_key_ids, ' ')
     FROM updated
     ON CONFLICT (webhook_event_id, attempt) DO NOTHING
     RETURNING webhook_event_id AS id`,
    [
      columns.id,
      columns.lease,
      columns.attempt,
      columns.status,
      columns.attemptedAt,
      columns.code,
      columns.body,
      columns.delayMs,
      columns.durationMs,
      columns.serviceKeyId,
      columns.standardKeyIds,
    ],
  );
  return new Set(rows.map((row) => row.id));
}

/** The endpoint was disabled or deleted after the event was created: end it without an attempt. */
export async function recordUndeliverable(
  db: Queryable,
  undeliverable: UndeliverableDelivery,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_events SET status = 'FAILED', next_attempt_at = NULL, last_response_body = $3, updated_at = now()
     WHERE id = $1 AND next_attempt_at = $2::timestamptz AND status IN ('PENDING', 'RETRYING')`,
    [undeliverable.pending.eventId, undeliverable.pending.lease, undeliverable.reason],
  );
  return rowCount === 1;
}
