import { randomUUID } from 'node:crypto';
import type { Database } from '../db/index.js';
import { endpointReceives } from './event-matching.js';
import { buildPayload } from './payload.js';

interface OutboxRow {
  id: number;
  org_id: number;
  event_type: string;
  data: unknown;
  created_at: Date;
}

interface EndpointRow {
  id: string;
  org_id: number;
  events: string[];
  created_at: Date;
}

/**
 * Turns up to `batchSize` unprocessed outbox rows into one webhook event per ACTIVE, non-deleted
 * endpoint of the same organization that subscribes to the event and existed when it happened (an
 * endpoint registered while the dispatcher was behind gets no history), and marks the rows processed,
 * all in ONE transaction: a crash either keeps the outbox rows pending or leaves both done.
 * Rows are claimed with SKIP LOCKED so several dispatchers split the outbox between them;
 * UNIQUE (outbox_id, endpoint_id) would stop a second fan-out of one row all the same.
 */
export async function fanOutOutbox(
  db: Database,
  options: { batchSize: number; maxAttempts: number },
): Promise<{ outboxRows: number; webhookEvents: number }> {
  return db.transaction(async (tx) => {
    const { rows: events } = await tx.query<OutboxRow>(
      `SELECT id, org_id, event_type, data, created_at FROM outbox
       WHERE processed_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [options.batchSize],
    );
    if (!events.length) return { outboxRows: 0, webhookEvents: 0 };

    const orgIds = [...new Set(events.map((event) => event.org_id))];
    const { rows: endpoints } = await tx.query<EndpointRow>(
      `SELECT id, org_id, events, created_at FROM webhook_endpoints
       WHERE org_id = ANY($1::bigint[]) AND status = 'ACTIVE' AND deleted_at IS NULL`,
      [orgIds],
    );

    const columns = {
      id: [] as string[],
      orgId: [] as number[],
      endpointId: [] as string[],
      outboxId: [] as number[],
      eventType: [] as string[],
      payload: [] as string[],
    };
    for (const event of events) {
      for (const endpoint of endpoints) {
        if (
          endpoint.org_id !== event.org_id ||
          endpoint.created_at > event.created_at ||
          !endpointReceives(endpoint.events, event.event_type)
        )
          continue;
        const deliveryId = randomUUID();
        columns.id.push(deliveryId);
        columns.orgId.push(event.org_id);
        columns.endpointId.push(endpoint.id);
        columns.outboxId.push(event.id);
        columns.eventType.push(event.event_type);
        columns.payload.push(
          buildPayload({
            deliveryId,
            type: event.event_type,
            occurredAt: event.created_at,
            data: event.data,
          }),
        );
      }
    }
    let created = 0;
    if (columns.id.length) {
      const inserted = await tx.query(
        `INSERT INTO webhook_events (id, org_id, endpoint_id, outbox_id, event_type, payload, max_attempts, next_attempt_at)
         SELECT id, org_id, endpoint_id, outbox_id, event_type, payload, $7, now()
         FROM unnest($1::uuid[], $2::bigint[], $3::uuid[], $4::bigint[], $5::text[], $6::text[])
           AS t (id, org_id, endpoint_id, outbox_id, event_type, payload)
         ON CONFLICT (outbox_id, endpoint_id) DO NOTHING`,
        [
          columns.id,
          columns.orgId,
          columns.endpointId,
          columns.outboxId,
          columns.eventType,
          columns.payload,
          options.maxAttempts,
        ],
      );
      created = inserted.rowCount ?? 0;
    }
    await tx.query('UPDATE outbox SET processed_at = now() WHERE id = ANY($1::bigint[])', [
      events.map((event) => event.id),
    ]);
    return { outboxRows: events.length, webhookEvents: created };
  });
}
