import type { Queryable } from '../db/index.js';
import { deliveryHeaders } from './payload.js';
import { type AfterFailure, afterFailedAttempt } from './retry-schedule.js';
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
  /** next_attempt_at as set by the claim, in Postgres' own text form (microseconds kept). */
  lease: string;
  endpoint: { url: string; secret: string; deliverable: boolean; why?: string };
}

export interface AttemptedDelivery {
  kind: 'attempted';
  pending: PendingDelivery;
  attemptedAt: Date;
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

interface ClaimedRow {
  id: string;
  org_id: number;
  endpoint_id: string;
  event_type: string;
  payload: string;
  attempts: number;
  max_attempts: number;
  lease: string;
  url: string;
  secret: string;
  endpoint_status: string;
  endpoint_deleted: boolean;
}

/** Claims up to `limit` due events and leases them for `leaseMs`, in one statement. */
export async function claimDueDeliveries(
  db: Queryable,
  limit: number,
  leaseMs: number,
): Promise<PendingDelivery[]> {
  const { rows } = await db.query<ClaimedRow>(
    `WITH due AS (
       SELECT id FROM webhook_events
       WHERE status IN ('PENDING', 'RETRYING') AND next_attempt_at <= now()
       ORDER BY next_attempt_at
       LIMIT $1
       FOR UPDATE SKIP LOCKED
     )
     UPDATE webhook_events e SET next_attempt_at = now() + $2::double precision * interval '1 millisecond'
     FROM due, webhook_endpoints ep
     WHERE e.id = due.id AND ep.org_id = e.org_id AND ep.id = e.endpoint_id
     RETURNING e.id, e.org_id, e.endpoint_id, e.event_type, e.payload, e.attempts, e.max_attempts,
       e.next_attempt_at::text AS lease, ep.url, ep.secret, ep.status AS endpoint_status,
       ep.deleted_at IS NOT NULL AS endpoint_deleted`,
    [limit, leaseMs],
  );
  return rows.map((row) => ({
    kind: 'pending',
    eventId: row.id,
    orgId: row.org_id,
    endpointId: row.endpoint_id,
    eventType: row.event_type,
    payload: row.payload,
    attempt: row.attempts + 1,
    maxAttempts: row.max_attempts,
    lease: row.lease,
    endpoint: {
      url: row.url,
      secret: row.secret,
      deliverable: !row.endpoint_deleted && row.endpoint_status === 'ACTIVE',
      ...(row.endpoint_deleted
        ? { why: 'Not delivered: the endpoint was deleted.' }
        : row.endpoint_status !== 'ACTIVE'
          ? { why: 'Not delivered: the endpoint was disabled.' }
          : {}),
    },
  }));
}

/** pending -> attempted: one signed POST of the stored payload. */
export async function attempt(pending: PendingDelivery, sender: WebhookSender): Promise<AttemptedDelivery> {
  const attemptedAt = new Date();
  const outcome = await sender.send({
    url: pending.endpoint.url,
    body: pending.payload,
    headers: deliveryHeaders({
      deliveryId: pending.eventId,
      type: pending.eventType,
      payload: pending.payload,
      secret: pending.endpoint.secret,
    }),
  });
  return { kind: 'attempted', pending, attemptedAt, outcome };
}

/** attempted -> succeeded | failed: any 2xx succeeds; everything else (3xx included) fails. */
export function judge(
  attempted: AttemptedDelivery,
  retryDelaysMs: readonly number[],
): SucceededDelivery | FailedDelivery {
  if (attempted.outcome.result === 'success') return { kind: 'succeeded', attempted };
  const { attempt: number, maxAttempts } = attempted.pending;
  return { kind: 'failed', attempted, next: afterFailedAttempt(number, maxAttempts, retryDelaysMs) };
}

/**
 * Records the attempt and the event's new state in one statement (atomic), only while this
 * dispatcher still holds the lease. Returns false when it did not (the attempt is then made again
 * by whoever holds it: at-least-once).
 */
async function recordAttempt(
  db: Queryable,
  attempted: AttemptedDelivery,
  status: 'SUCCESS' | 'RETRYING' | 'FAILED',
  retryDelayMs: number | null,
): Promise<boolean> {
  const { pending, outcome, attemptedAt } = attempted;
  const { rowCount } = await db.query(
    `WITH updated AS (
       UPDATE webhook_events SET
         status = $4, attempts = $3,
         next_attempt_at = CASE WHEN $4 = 'RETRYING' THEN now() + $8::double precision * interval '1 millisecond' END,
         last_attempt_at = $5, last_response_code = $6, last_response_body = $7, updated_at = now()
       WHERE id = $1 AND next_attempt_at = $2::timestamptz AND attempts = $3 - 1
         AND status IN ('PENDING', 'RETRYING')
       RETURNING id, org_id
     )
     INSERT INTO webhook_attempts (org_id, webhook_event_id, attempt, attempted_at, response_code, duration_ms, response_body)
     SELECT org_id, id, $3, $5, $6, $9, $7 FROM updated
     ON CONFLICT (webhook_event_id, attempt) DO NOTHING`,
    [
      pending.eventId,
      pending.lease,
      pending.attempt,
      status,
      attemptedAt,
      outcome.responseCode,
      outcome.responseBody,
      retryDelayMs,
      outcome.durationMs,
    ],
  );
  return rowCount === 1;
}

export function recordSucceeded(db: Queryable, succeeded: SucceededDelivery): Promise<boolean> {
  return recordAttempt(db, succeeded.attempted, 'SUCCESS', null);
}

export function recordFailed(db: Queryable, failed: FailedDelivery): Promise<boolean> {
  const { next } = failed;
  return recordAttempt(db, failed.attempted, next.status, next.status === 'RETRYING' ? next.delayMs : null);
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
