import type { Database, Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { readPage } from '../list-pages/index.js';
import type {
  CreatedWebhookEndpoint,
  CreateWebhookEndpoint,
  PaginationQuery,
  RotateWebhookSecret,
  UpdateWebhookEndpoint,
  WebhookEndpoint,
} from '../schemas/index.js';
import { isUuid } from '../schemas/index.js';
import { normalizeSelectors } from './event-matching.js';
import { generateSigningSecret, signingKeyId } from './signing.js';
import { judgeEndpointUrl } from './url-policy.js';

/** Where endpoint URLs are accepted: whether `http://localhost` style URLs are (WEBHOOK_ALLOW_LOCALHOST). */
export interface EndpointPolicy {
  allowLocalhost: boolean;
}

/*
 * The secrets are read only to name them by key id; no response carries them but the ones that
 * create them. A previous secret past its expiry is shown as none, even before the dispatcher
 * forgets it.
 */
const COLUMNS = `id, url, events, status, description, secret,
  CASE WHEN previous_secret_expires_at > now() THEN previous_secret END AS previous_secret,
  CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END AS previous_secret_expires_at,
  created_at, updated_at`;

interface EndpointRow {
  id: string;
  url: string;
  events: string[];
  status: WebhookEndpoint['status'];
  description: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    object: 'webhook_endpoint',
    url: row.url,
    events: row.events,
    status: row.status,
    description: row.description,
    secret_key_id: signingKeyId(row.secret),
    previous_secret_key_id: row.previous_secret === null ? null : signingKeyId(row.previous_secret),
    previous_secret_expires_at: row.previous_secret_expires_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The URL to store: its WHATWG-normalized form, judged by the policy (422 naming `url` when refused). */
function acceptedUrl(raw: string, policy: EndpointPolicy): string {
  const judgement = judgeEndpointUrl(raw, policy.allowLocalhost);
  if (!judgement.accepted) {
    throw ApiError.validation([{ field: 'url', message: judgement.problem, code: 'invalid_value' }]);
  }
  return judgement.url;
}

/** The only response that carries the signing secret. */
export async function createEndpoint(
  db: Queryable,
  orgId: number,
  input: CreateWebhookEndpoint,
  policy: EndpointPolicy,
): Promise<CreatedWebhookEndpoint> {
  const url = acceptedUrl(input.url, policy);
  const secret = generateSigningSecret();
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (org_id, url, events, status, description, secret)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
    [orgId, url, normalizeSelectors(input.events), input.status, input.description, secret],
  );
  return { ...toEndpoint(rows[0]!), secret };
}

export async function getEndpoint(
  db: Queryable,
  orgId: number,
  endpointId: string,
): Promise<WebhookEndpoint> {
  assertEndpointId(endpointId);
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`,
    [orgId, endpointId],
  );
  if (!rows[0]) throw ApiError.notFound(`Webhook endpoint ${endpointId}`);
  return toEndpoint(rows[0]);
}

export async function listEndpoints(
  db: Queryable,
  orgId: number,
  filters: { status?: WebhookEndpoint['status'] | undefined },
  page: PaginationQuery,
): Promise<{ data: WebhookEndpoint[]; total: number }> {
  const where = 'org_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR status = $2)';
  const values = [orgId, filters.status ?? null];
  const { rows, total } = await readPage<EndpointRow>(
    db,
    {
      table: 'webhook_endpoints',
      alias: 'e',
      columns: COLUMNS,
      where,
      values,
    },
    page,
  );
  return { data: rows.map(toEndpoint), total: await total };
}

/**
 * Changes the given fields. Disabling an endpoint ends its pending deliveries in the same
 * transaction (DISABLED endpoints receive nothing); they stay retryable once it is enabled again.
 */
export async function updateEndpoint(
  db: Database,
  orgId: number,
  endpointId: string,
  patch: UpdateWebhookEndpoint,
  policy: EndpointPolicy,
): Promise<WebhookEndpoint> {
  assertEndpointId(endpointId);
  const url = patch.url === undefined ? null : acceptedUrl(patch.url, policy);
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<EndpointRow>(
      `UPDATE webhook_endpoints SET
         url = coalesce($3, url),
         events = coalesce($4, events),
         status = coalesce($5, status),
         description = coalesce($6, description),
         updated_at = CASE WHEN $7 THEN now() ELSE updated_at END
       WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL
       RETURNING ${COLUMNS}`,
      [
        orgId,
        endpointId,
        url,
        patch.events ? normalizeSelectors(patch.events) : null,
        patch.status ?? null,
        patch.description ?? null,
        Object.values(patch).some((value) => value !== undefined),
      ],
    );
    if (!rows[0]) throw ApiError.notFound(`Webhook endpoint ${endpointId}`);
    if (patch.status === 'DISABLED') {
      await endPendingDeliveries(tx, orgId, endpointId, 'Not delivered: the endpoint was disabled.');
    }
    return toEndpoint(rows[0]);
  });
}

/**
 * A new secret, answered this once. The one it replaces keeps signing webhook-signature for
 * `expire_previous_in` seconds (not at all for 0); the secret before that is dropped, so after two
 * rotations in a row only the latest two sign. One statement: concurrent rotations queue on the
 * row, each replacing the secret the one before it set. Works on a DISABLED endpoint, which is
 * how it is re-enabled safely after a leak; its status is left as it is.
 */
export async function rotateSecret(
  db: Queryable,
  orgId: number,
  endpointId: string,
  input: RotateWebhookSecret,
): Promise<CreatedWebhookEndpoint> {
  assertEndpointId(endpointId);
  const secret = generateSigningSecret();
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET
       previous_secret = CASE WHEN $4 > 0 THEN secret END,
       previous_secret_expires_at = CASE WHEN $4 > 0 THEN now() + $4 * interval '1 second' END,
       secret = $3,
       updated_at = now()
     WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL
     RETURNING ${COLUMNS}`,
    [orgId, endpointId, secret, input.expire_previous_in],
  );
  if (!rows[0]) throw ApiError.notFound(`Webhook endpoint ${endpointId}`);
  return { ...toEndpoint(rows[0]), secret };
}

/**
 * Forgets every previous secret whose overlap ended by `now` (the dispatcher's clock, which also
 * stops signing with it at that instant). Returns how many endpoints had one.
 */
export async function forgetExpiredSecrets(db: Queryable, now: Date): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints SET previous_secret = NULL, previous_secret_expires_at = NULL
     WHERE previous_secret IS NOT NULL AND previous_secret_expires_at <= $1`,
    [now],
  );
  return rowCount ?? 0;
}

/** A soft delete: the endpoint disappears from the API, its pending deliveries end, its history stays. */
export async function deleteEndpoint(db: Database, orgId: number, endpointId: string): Promise<void> {
  assertEndpointId(endpointId);
  await db.transaction(async (tx) => {
    const { rowCount } = await tx.query(
      `UPDATE webhook_endpoints SET deleted_at = now(), updated_at = now()
       WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL`,
      [orgId, endpointId],
    );
    if (!rowCount) throw ApiError.notFound(`Webhook endpoint ${endpointId}`);
    await endPendingDeliveries(tx, orgId, endpointId, 'Not delivered: the endpoint was deleted.');
  });
}

async function endPendingDeliveries(
  tx: Queryable,
  orgId: number,
  endpointId: string,
  reason: string,
): Promise<void> {
  await tx.query(
    `UPDATE webhook_events SET status = 'FAILED', next_attempt_at = NULL, last_response_body = $3, updated_at = now()
     WHERE org_id = $1 AND endpoint_id = $2 AND status IN ('PENDING', 'RETRYING')`,
    [orgId, endpointId, reason],
  );
}

/** A path id that is not a UUID names no endpoint: 404, exactly like a missing one. */
function assertEndpointId(endpointId: string): void {
  if (!isUuid(endpointId)) throw ApiError.notFound(`Webhook endpoint ${endpointId}`);
}
