import type { UsageEvent } from '../schemas/index.js';

/**
 * A usage event as the log, the sinks and the dedup store carry it. Its identity is
 * (orgId, subscriptionItemId, idempotencyKey): the unique key in Postgres and the sorting key in
 * ClickHouse. `id` names one attempt to record it.
 */
export interface UsageEventRecord {
  id: string;
  orgId: number;
  subscriptionItemId: number;
  idempotencyKey: string;
  /** Exact decimal text, at most 8 fractional digits. */
  quantity: string;
  occurredAtMs: number;
  recordedAtMs: number;
}

export function toPublicUsageEvent(record: UsageEventRecord): UsageEvent {
  return {
    id: record.id,
    object: 'usage_event',
    subscription_item_id: record.subscriptionItemId,
    quantity: Number(record.quantity),
    timestamp: new Date(record.occurredAtMs).toISOString(),
    idempotency_key: record.idempotencyKey,
    recorded_at: new Date(record.recordedAtMs).toISOString(),
  };
}

/** Message key on the log: one item's events share a partition, so they stay in order. */
export function logMessageKey(orgId: number, subscriptionItemId: number): string {
  return `${orgId}:${subscriptionItemId}`;
}

/** The log message body (version 1): JSON, quantity as decimal text so it stays exact. */
export function encodeLogMessage(record: UsageEventRecord): { key: string; value: string } {
  return {
    key: logMessageKey(record.orgId, record.subscriptionItemId),
    value: JSON.stringify({
      v: 1,
      id: record.id,
      org_id: record.orgId,
      subscription_item_id: record.subscriptionItemId,
      idempotency_key: record.idempotencyKey,
      quantity: record.quantity,
      occurred_at_ms: record.occurredAtMs,
      recorded_at_ms: record.recordedAtMs,
    }),
  };
}

const DECIMAL = /^\d+(\.\d{1,8})?$/;

/** Throws on anything that is not a version-1 message: the sinks log it and skip it. */
export function decodeLogMessage(value: Buffer | string | null): UsageEventRecord {
  if (value === null) throw new Error('empty usage message');
  const m = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  if (
    m?.v !== 1 ||
    typeof m.id !== 'string' ||
    !Number.isSafeInteger(m.org_id) ||
    !Number.isSafeInteger(m.subscription_item_id) ||
    typeof m.idempotency_key !== 'string' ||
    typeof m.quantity !== 'string' ||
    !DECIMAL.test(m.quantity) ||
    !Number.isSafeInteger(m.occurred_at_ms) ||
    !Number.isSafeInteger(m.recorded_at_ms)
  ) {
    throw new Error('malformed usage message');
  }
  return {
    id: m.id,
    orgId: m.org_id,
    subscriptionItemId: m.subscription_item_id,
    idempotencyKey: m.idempotency_key,
    quantity: m.quantity,
    occurredAtMs: m.occurred_at_ms,
    recordedAtMs: m.recorded_at_ms,
  };
}

/** The dedup store's key of an identity. */
export function dedupKey(prefix: string, orgId: number, subscriptionItemId: number, key: string): string {
  return `${prefix}usage:${orgId}:${subscriptionItemId}:${key}`;
}

/**
 * What the dedup store keeps under an identity: the state and the event, without the identity
 * (it is in the store's key). `pending` while the log has not acknowledged the event yet,
 * `committed` once it has. Encoding is deterministic: a pending record is compared byte for byte
 * to make sure it is still ours before it is committed or released.
 */
export type DedupState = 'pending' | 'committed';

export function encodeDedupRecord(state: DedupState, record: UsageEventRecord): string {
  return `${state === 'pending' ? 'P' : 'C'}|${record.id}|${record.quantity}|${record.occurredAtMs}|${record.recordedAtMs}`;
}

export function decodeDedupRecord(
  text: string,
  identity: Pick<UsageEventRecord, 'orgId' | 'subscriptionItemId' | 'idempotencyKey'>,
): { state: DedupState; record: UsageEventRecord } {
  const [state, id, quantity, occurred, recorded] = text.split('|');
  if ((state !== 'P' && state !== 'C') || !id || !quantity || !occurred || !recorded) {
    throw new Error('malformed dedup record');
  }
  return {
    state: state === 'P' ? 'pending' : 'committed',
    record: {
      id,
      orgId: identity.orgId,
      subscriptionItemId: identity.subscriptionItemId,
      idempotencyKey: identity.idempotencyKey,
      quantity,
      occurredAtMs: Number(occurred),
      recordedAtMs: Number(recorded),
    },
  };
}
