import type { Database, Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { readPage } from '../list-pages/index.js';
import type {
  PaginationQuery,
  RecoverWebhookEvents,
  WebhookEvent,
  WebhookEventStatus,
  WebhookEventWithHistory,
  WebhookRecovery,
} from '../schemas/index.js';
import { isUuid } from '../schemas/index.js';
import { WEBHOOK_EVENT_DUE_CHANNEL } from './delivery.js';

const COLUMNS = `id, endpoint_id, event_type, status, payload, attempts, max_attempts, next_attempt_at,
  last_attempt_at, last_response_code, last_response_body, created_at, updated_at`;

interface EventRow {
  id: string;
  endpoint_id: string;
  event_type: string;
  status: WebhookEventStatus;
  payload: string;
  attempts: number;
  max_attempts: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_response_code: number | null;
  last_response_body: string | null;
  created_at: Date;
  updated_at: Date;
}

function toEvent(row: EventRow): WebhookEvent {
  return {
    id: row.id,
    object: 'webhook_event',
    endpoint_id: row.endpoint_id,
    event_type: row.event_type,
    status: row.status,
    payload: JSON.parse(row.payload),
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    next_attempt_at: row.next_attempt_at?.toISOString() ?? null,
    last_attempt_at: row.last_attempt_at?.toISOString() ?? null,
    last_response_code: row.last_response_code,
    last_response_body: row.last_response_body,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export interface WebhookEventFilters {
  endpoint_id?: string | undefined;
  status?: WebhookEventStatus | undefined;
  event_type?: string | undefined;
}

/** Delivery history, newest first (see libs/list-pages); events of deleted endpoints stay listed. */
export async function listWebhookEvents(
  db: Queryable,
  orgId: number,
  filters: WebhookEventFilters,
  page: PaginationQuery,
): Promise<{ data: WebhookEvent[]; total: number }> {
  const where = `org_id = $1 AND ($2::uuid IS NULL OR endpoint_id = $2)
    AND ($3::text IS NULL OR status = $3) AND ($4::text IS NULL OR event_type = $4)`;
  const values = [orgId, filters.endpoint_id ?? null, filters.status ?? null, filters.event_type ?? null];
  const { rows, total } = await readPage<EventRow>(
    db,
    {
      table: 'webhook_events',
      alias: 'w',
      columns: COLUMNS,
      where,
      values,
    },
    page,
  );
  return { data: rows.map(toEvent), total: await total };
}

export async function getWebhookEvent(
  db: Queryable,
  orgId: number,
  eventId: string,
): Promise<WebhookEventWithHistory> {
  assertEventId(eventId);
  // One statement, so one snapshot: the event's summary (attempts, status) and its history always
  // agree, even when an attempt is recorded while this reads.
  const { rows } = await db.query<
    EventRow & {
      attempt: number | null;
      attempted_at: Date | null;
      response_code: number;
      duration_ms: number;
      service_signature_key_id: string | null;
      standard_signature_key_ids: string[] | null;
    }
  >(
    `WITH event AS (SELECT ${COLUMNS} FROM webhook_events WHERE org_id = $1 AND id = $2)
     SELECT event.*, a.attempt, a.attempted_at, a.response_code, a.duration_ms,
       a.service_signature_key_id, a.standard_signature_key_ids
     FROM event LEFT JOIN webhook_attempts a ON a.org_id = $1 AND a.webhook_event_id = event.id
     ORDER BY a.attempt`,
    [orgId, eventId],
  );
  if (!rows[0]) throw ApiError.notFound(`Webhook event ${eventId}`);
  return {
    ...toEvent(rows[0]),
    attempt_history: rows
      .filter((row) => row.attempt !== null)
      .map((row) => ({
        attempt: row.attempt!,
        at: row.attempted_at!.toISOString(),
        response_code: row.response_code,
        duration_ms: row.duration_ms,
        signatures:
          row.service_signature_key_id === null
            ? null
            : {
                x_service_signature: row.service_signature_key_id,
                webhook_signature: row.standard_signature_key_ids ?? [],
              },
      })),
  };
}

/**
 * A manual retry: a FAILED or RETRYING event becomes RETRYING, due now, and the dispatcher makes
 * one attempt at once, or as soon as the events sent again before it that happened earlier are
 * done (`ordered`, see WAITS_ITS_TURN). A FAILED event gets exactly one more attempt (max_attempts = attempts + 1,
 * also when it failed before using them all, its endpoint disabled midway); a RETRYING one keeps
 * its remaining automatic retries. The spec accepts a retry of any FAILED or RETRYING event, so
 * one whose endpoint is disabled or deleted is accepted too: the dispatcher then ends it FAILED
 * without sending, saying why in last_response_body.
 */
export async function retryWebhookEvent(db: Database, orgId: number, eventId: string): Promise<WebhookEvent> {
  assertEventId(eventId);
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ status: WebhookEventStatus }>(
      `SELECT status FROM webhook_events WHERE org_id = $1 AND id = $2 FOR UPDATE`,
      [orgId, eventId],
    );
    const current = rows[0];
    if (!current) throw ApiError.notFound(`Webhook event ${eventId}`);
    if (current.status === 'SUCCESS')
      throw ApiError.conflict('The event was delivered; it cannot be retried.');
    if (current.status === 'PENDING') {
      throw ApiError.conflict('The event is pending its first attempt; it cannot be retried yet.');
    }
    const updated = await tx.query<EventRow>(
      `UPDATE webhook_events SET status = 'RETRYING', next_attempt_at = now(), ordered = true,
         max_attempts = CASE WHEN status = 'FAILED' THEN attempts + 1 ELSE max_attempts END,
         updated_at = now()
       WHERE org_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [orgId, eventId],
    );
    // Delivered at commit: the dispatcher makes the attempt now rather than at its next poll.
    await tx.query(`SELECT pg_notify('${WEBHOOK_EVENT_DUE_CHANNEL}', '')`);
    return toEvent(updated.rows[0]!);
  });
}

/**
 * Gives every FAILED event of the endpoint created at or after `since` a new series of attempts:
 * the same id and bytes, `seriesLength` more attempts spaced as the first ones were, sent one at a
 * time in the order the events happened (`ordered`, see WAITS_ITS_TURN). Only FAILED events move, so calling again while they are
 * queued queues nothing twice (concurrent calls included: the second waits for the first's row
 * locks and then finds them RETRYING). A DISABLED endpoint receives nothing, so recovering to
 * it is a 409: enable it first.
 */
export async function recoverWebhookEvents(
  db: Database,
  orgId: number,
  endpointId: string,
  input: RecoverWebhookEvents,
  series: { seriesLength: number },
): Promise<WebhookRecovery> {
  if (!isUuid(endpointId)) throw ApiError.notFound(`Webhook endpoint ${endpointId}`);
  return db.transaction(async (tx) => {
    // FOR SHARE: a concurrent disable or delete commits before this reads, or waits for it
    const { rows } = await tx.query<{ status: string }>(
      `SELECT status FROM webhook_endpoints WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL FOR SHARE`,
      [orgId, endpointId],
    );
    if (!rows[0]) throw ApiError.notFound(`Webhook endpoint ${endpointId}`);
    if (rows[0].status !== 'ACTIVE') {
      throw ApiError.conflict('The endpoint is disabled and receives nothing; enable it, then recover.');
    }
    const { rowCount } = await tx.query(
      `UPDATE webhook_events e SET status = 'RETRYING',
         series_first_attempt = e.attempts + 1,
         max_attempts = e.attempts + $4,
         next_attempt_at = now(),
         ordered = true,
         updated_at = now()
       WHERE org_id = $1 AND endpoint_id = $2 AND status = 'FAILED' AND created_at >= $3`,
      [orgId, endpointId, input.since, series.seriesLength],
    );
    const queued = rowCount ?? 0;
    // Delivered at commit: the dispatcher starts now rather than at its next poll.
    if (queued) await tx.query(`SELECT pg_notify('${WEBHOOK_EVENT_DUE_CHANNEL}', '')`);
    return { queued };
  });
}

/** A path id that is not a UUID names no event: 404, exactly like a missing one. */
function assertEventId(eventId: string): void {
  if (!isUuid(eventId)) throw ApiError.notFound(`Webhook event ${eventId}`);
}
