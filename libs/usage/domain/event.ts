import { writeDecimal } from '../../bytes/index.js';
import { isUuid, type UsageEvent } from '../../schemas/index.js';

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

/** What makes two events one: the unique key in Postgres, the dedup store's key. */
export type UsageIdentity = Pick<UsageEventRecord, 'orgId' | 'subscriptionItemId' | 'idempotencyKey'>;

export function toPublicUsageEvent(record: UsageEventRecord): UsageEvent {
  return {
    id: record.id,
    object: 'usage_event',
    subscription_item_id: record.subscriptionItemId,
    quantity: Number(record.quantity),
    timestamp: isoString(record.occurredAtMs),
    idempotency_key: record.idempotencyKey,
    recorded_at: isoString(record.recordedAtMs),
  };
}

let lastMs = Number.NaN;
let lastIso = '';

/** toISOString, remembering the last answer: the events of a batch share their times. */
function isoString(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

/** Message key on the log: one item's events share a partition, so they stay in order. */
export function logMessageKey(orgId: number, subscriptionItemId: number): string {
  return `${orgId}:${subscriptionItemId}`;
}

/** First line of every usage message: the format, so a later one can be told apart. */
const LOG_FORMAT = 'usage/1';
const DECIMAL = /^\d+(\.\d{1,8})?$/;
const INTEGER = /^\d{1,15}$/;

/**
 * The log messages of a window of events. Each event is routed by its key, organization and item
 * (`partitionOf`: where Kafka's default partitioner sends that key), so one item's events share a
 * partition and stay in order. Events of one partition share ONE message, one event per line
 * (id, organization, item, quantity, occurred_at and recorded_at in ms, idempotency key, tab
 * separated): kafkajs spends most of its time per message, so this is what keeps producing cheap
 * whatever the number of items. Without `partitionOf` (partition count unknown yet) messages are
 * keyed by organization and item instead, which lands them on the same partitions. The idempotency
 * key goes last and needs no escaping: ingest refuses keys with control characters.
 *
 * The window is written straight into one buffer, each message a slice of it. Lines built as
 * strings and appended to their message were chains of pieces that V8 had to walk and copy
 * (flatten) before Kafka could count a message's bytes: that cost the ingest service more than a
 * tenth of its CPU in a batch load.
 */
export function encodeLogMessages(
  events: readonly UsageEventRecord[],
  partitionOf?: (key: string) => number,
): { key?: string; partition?: number; value: Buffer }[] {
  const byTarget = new Map<string | number, UsageEventRecord[]>();
  let size = 0;
  for (const event of events) {
    const key = logMessageKey(event.orgId, event.subscriptionItemId);
    const target = partitionOf ? partitionOf(key) : key;
    const group = byTarget.get(target);
    if (group) group.push(event);
    else {
      byTarget.set(target, [event]);
      size += LOG_FORMAT.length;
    }
    size += maxLineBytes(event);
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  return Array.from(byTarget, ([target, group]) => {
    const start = at;
    at += out.write(LOG_FORMAT, at, 'latin1');
    for (const event of group) at = writeLogLine(out, at, event);
    const value = out.subarray(start, at);
    return typeof target === 'number' ? { partition: target, value } : { key: target, value };
  });
}

const NEWLINE = 0x0a;
const TAB = 0x09;
/** The longest text of a number: String(-Number.MAX_VALUE) has 24 characters. */
const MAX_NUMBER_CHARS = 24;

/** Room for one line: every text at 3 bytes a UTF-16 unit (UTF-8's most), 7 separators. */
function maxLineBytes(event: UsageEventRecord): number {
  return (
    7 + 4 * MAX_NUMBER_CHARS + 3 * (event.id.length + event.quantity.length + event.idempotencyKey.length)
  );
}

function writeLogLine(out: Buffer, at: number, event: UsageEventRecord): number {
  out[at++] = NEWLINE;
  at += out.write(event.id, at, 'utf8');
  out[at++] = TAB;
  at = writeDecimal(out, at, event.orgId);
  out[at++] = TAB;
  at = writeDecimal(out, at, event.subscriptionItemId);
  out[at++] = TAB;
  at += out.write(event.quantity, at, 'utf8');
  out[at++] = TAB;
  at = writeDecimal(out, at, event.occurredAtMs);
  out[at++] = TAB;
  at = writeDecimal(out, at, event.recordedAtMs);
  out[at++] = TAB;
  return at + out.write(event.idempotencyKey, at, 'utf8');
}

/** The events of one message. Throws on anything else: the sinks log it and skip it. */
export function decodeLogMessage(value: Buffer | string | null): UsageEventRecord[] {
  if (value === null) throw new Error('usage message without a value');
  const lines = value.toString().split('\n');
  if (lines[0] !== LOG_FORMAT) throw new Error('not a usage message');
  const events: UsageEventRecord[] = [];
  for (let i = 1; i < lines.length; i++) {
    const [id, org, item, quantity, occurred, recorded, idempotencyKey] = lines[i]!.split('\t', 7);
    const event = eventOfFields(id, org, item, quantity, occurred, recorded, idempotencyKey);
    if (!event) throw new Error(`malformed usage event on line ${i + 1}`);
    events.push(event);
  }
  return events;
}

/** The event a log line's fields spell, or undefined when one of them is missing or malformed. */
function eventOfFields(
  id: string | undefined,
  org: string | undefined,
  item: string | undefined,
  quantity: string | undefined,
  occurred: string | undefined,
  recorded: string | undefined,
  idempotencyKey: string | undefined,
): UsageEventRecord | undefined {
  if (
    !id ||
    !isUuid(id) ||
    !org ||
    !INTEGER.test(org) ||
    !item ||
    !INTEGER.test(item) ||
    !quantity ||
    !DECIMAL.test(quantity) ||
    !occurred ||
    !INTEGER.test(occurred) ||
    !recorded ||
    !INTEGER.test(recorded) ||
    !idempotencyKey
  ) {
    return undefined;
  }
  return {
    id,
    orgId: Number(org),
    subscriptionItemId: Number(item),
    idempotencyKey,
    quantity,
    occurredAtMs: Number(occurred),
    recordedAtMs: Number(recorded),
  };
}

/** The dedup store's key of an identity. */
export function dedupKey(prefix: string, orgId: number, subscriptionItemId: number, key: string): string {
  return `${prefix}usage:${orgId}:${subscriptionItemId}:${key}`;
}

/**
 * What the dedup store keeps under an identity: the state and the event, without the identity
 * (it is in the store's key). `pending` from the reservation on: its owner is appending the event,
 * has appended it, or died trying; `adopted` once another request took over appending that same
 * event (its owner may no longer release the key). Neither says the event is durable: whoever
 * answers with it has it acknowledged by the log first (see UsageIngest). `committed` once a
 * request that adopted it had it acknowledged: later repeats answer from the store. Encoding is
 * deterministic: a record is compared byte for byte before it is released or changes state.
 */
export type DedupState = 'pending' | 'adopted' | 'committed';

const STATE_TAGS = { pending: 'P', adopted: 'A', committed: 'C' } as const;
const TAG_STATES = new Map<string | undefined, DedupState>([
  ['P', 'pending'],
  ['A', 'adopted'],
  ['C', 'committed'],
]);

export function encodeDedupRecord(state: DedupState, record: UsageEventRecord): string {
  return `${STATE_TAGS[state]}|${record.id}|${record.quantity}|${record.occurredAtMs}|${record.recordedAtMs}`;
}

/** The same event in another state. */
export function dedupRecordIn(state: DedupState, text: string): string {
  return `${STATE_TAGS[state]}${text.slice(1)}`;
}

export function decodeDedupRecord(
  text: string,
  identity: UsageIdentity,
): { state: DedupState; record: UsageEventRecord } {
  const [tag, id, quantity, occurred, recorded] = text.split('|');
  const state = TAG_STATES.get(tag);
  if (!state || !id || !quantity || !occurred || !recorded) {
    throw new Error('malformed dedup record');
  }
  return {
    state,
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

/**
 * A void of a recorded event, as the log and the sinks carry it: the whole event (ClickHouse
 * replaces the event's row with a voided copy of it, so it needs every column) and when it was
 * voided. It travels on the event's partition, after the event itself: ingest acknowledged the
 * event before anyone could name it to void it.
 */
export interface UsageVoidRecord {
  event: UsageEventRecord;
  voidedAtMs: number;
}

const VOID_FORMAT = 'usage-void/1';

/** One message per void, keyed like its event so that it lands on the event's partition. */
export function encodeVoidMessages(
  voids: readonly UsageVoidRecord[],
  partitionOf?: (key: string) => number,
): { key?: string; partition?: number; value: Buffer }[] {
  return voids.map(({ event, voidedAtMs }) => {
    const key = logMessageKey(event.orgId, event.subscriptionItemId);
    const line = [
      event.id,
      event.orgId,
      event.subscriptionItemId,
      event.quantity,
      event.occurredAtMs,
      event.recordedAtMs,
      voidedAtMs,
      event.idempotencyKey,
    ].join('\t');
    const value = Buffer.from(`${VOID_FORMAT}\n${line}`);
    return partitionOf ? { partition: partitionOf(key), value } : { key, value };
  });
}

/** What one log message holds: events or voids. Throws on anything else. */
export function decodeLogEntries(value: Buffer | string | null): {
  events: UsageEventRecord[];
  voids: UsageVoidRecord[];
} {
  if (value?.toString().startsWith(`${VOID_FORMAT}\n`)) {
    const voids: UsageVoidRecord[] = [];
    const lines = value.toString().split('\n');
    for (let i = 1; i < lines.length; i++) {
      const [id, org, item, quantity, occurred, recorded, voided, idempotencyKey] = lines[i]!.split('\t', 8);
      const event = eventOfFields(id, org, item, quantity, occurred, recorded, idempotencyKey);
      if (!event || !voided || !INTEGER.test(voided))
        throw new Error(`malformed usage void on line ${i + 1}`);
      voids.push({ event, voidedAtMs: Number(voided) });
    }
    return { events: [], voids };
  }
  return { events: decodeLogMessage(value), voids: [] };
}
