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

/**
 * Message key of a void on the log: the void of an event goes where its organization and item
 * route (events themselves carry no key; see encodeLogMessages).
 */
export function logMessageKey(orgId: number, subscriptionItemId: number): string {
  return `${orgId}:${subscriptionItemId}`;
}

/** First line of a message in the text format (usage/1): still read, no longer written. */
const LOG_FORMAT = 'usage/1';
/**
 * First byte of a message in the compact format: its version. A text message starts with `u`
 * (0x75), so the two are told apart by that byte; a later format takes another value.
 */
export const LOG_VERSION = 2;
/**
 * A message of the compact format stays under this size (Kafka's default limit on a record batch,
 * `message.max.bytes`, is 1 MB): a larger window is cut into several messages, dealt to several
 * partitions. A window of single events (hundreds of events at most) stays whole; a window of
 * batches is spread: cut at 512 KB, batch windows sat on one or two partitions and the batch load
 * accepted half the events/s at the same CPU per event (bench/RESULTS.md).
 */
export const MAX_LOG_MESSAGE_BYTES = 64 * 1024;
const DECIMAL = /^\d+(\.\d{1,8})?$/;
const INTEGER = /^\d{1,15}$/;
/** The largest organization or item id a message carries: 15 decimal digits, as the text format. */
const MAX_ID = 999_999_999_999_999;
const UUID_BYTES = 36;
const TIME_BYTES = 6;

/**
 * The log messages of a window of events: ONE message for the whole window (several only past
 * MAX_LOG_MESSAGE_BYTES), without a key, so the producer deals the messages round
 * the partitions. The broker keeps each produce call's records for one partition as one message
 * set, and the Kafka test broker walks a partition's sets for every fetch and answers one set per
 * partition per fetch: a window spread over every partition cost it (and the sinks fetching it) a
 * set per partition; kept whole it costs one. So an item's events are no longer on one partition,
 * nor in order: both stores keep the earliest recorded event of an identity, whatever order they
 * meet them in (docs/decisions.md, "One Kafka message per ingest flush").
 *
 * The compact format (LOG_VERSION), one event after another with nothing between them:
 *   id                  36 bytes, the UUID's text
 *   organization, item  unsigned LEB128 varints
 *   quantity            1 byte of length, then its decimal text
 *   occurred, recorded  ms since the epoch, 6 bytes each, little-endian
 *   idempotency key     a varint of its UTF-8 length, then its bytes
 * The window is written straight into one buffer, each message a slice of it: lines built as
 * strings were chains of pieces V8 walked and copied before Kafka could count a message's bytes.
 */
export function encodeLogMessages(events: readonly UsageEventRecord[]): { value: Buffer }[] {
  let size = 0;
  for (const event of events) size += maxEventBytes(event);
  // one version byte per message; a message holds at least half its limit before a cut
  const out = Buffer.allocUnsafe(size + 2 + Math.ceil(size / (MAX_LOG_MESSAGE_BYTES / 2)));
  const messages: { value: Buffer }[] = [];
  let start = 0;
  let at = 0;
  for (const event of events) {
    if (at > start && at - start + maxEventBytes(event) > MAX_LOG_MESSAGE_BYTES) {
      messages.push({ value: out.subarray(start, at) });
      start = at;
    }
    if (at === start) out[at++] = LOG_VERSION;
    at = writeEvent(out, at, event);
  }
  if (at > start) messages.push({ value: out.subarray(start, at) });
  return messages;
}

/** Room for one event: text at UTF-8's most (3 bytes a UTF-16 unit), varints at 8 bytes. */
function maxEventBytes(event: UsageEventRecord): number {
  return (
    UUID_BYTES + 8 + 8 + 1 + event.quantity.length + 2 * TIME_BYTES + 8 + 3 * event.idempotencyKey.length
  );
}

function writeEvent(out: Buffer, at: number, event: UsageEventRecord): number {
  if (event.id.length !== UUID_BYTES) throw new Error('a usage event id is a UUID');
  at += out.write(event.id, at, 'latin1');
  at = writeVarint(out, at, event.orgId);
  at = writeVarint(out, at, event.subscriptionItemId);
  out[at] = event.quantity.length;
  at += 1 + out.write(event.quantity, at + 1, 'latin1');
  at = out.writeUIntLE(event.occurredAtMs, at, TIME_BYTES);
  at = out.writeUIntLE(event.recordedAtMs, at, TIME_BYTES);
  // the key's length goes first, in as many bytes as its longest UTF-8 form needs
  const lengthBytes = varintLength(3 * event.idempotencyKey.length);
  const keyBytes = out.write(event.idempotencyKey, at + lengthBytes, 'utf8');
  writePaddedVarint(out, at, keyBytes, lengthBytes);
  return at + lengthBytes + keyBytes;
}

/** Unsigned LEB128 of a non-negative safe integer (ids pass 2^31: no bitwise operators). */
function writeVarint(out: Buffer, at: number, value: number): number {
  while (value >= 0x80) {
    out[at++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  out[at++] = value;
  return at;
}

function varintLength(value: number): number {
  let length = 1;
  for (; value >= 0x80; length++) value = Math.floor(value / 0x80);
  return length;
}

/** A varint in exactly `length` bytes (continuation bits over zero groups): the same value. */
function writePaddedVarint(out: Buffer, at: number, value: number, length: number): void {
  for (let i = 0; i < length - 1; i++) {
    out[at + i] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  out[at + length - 1] = value;
}

/** The events of a message in the compact format. Throws on a short or malformed message. */
function decodeCompactEvents(value: Buffer): UsageEventRecord[] {
  const events: UsageEventRecord[] = [];
  const end = value.length;
  let at = 1;
  const varint = (): number => {
    let result = 0;
    for (let scale = 1; scale <= 2 ** 49; scale *= 0x80) {
      if (at >= end) break;
      const byte = value[at++]!;
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) return result;
    }
    throw new Error('malformed usage message: a number runs past its end');
  };
  while (at < end) {
    if (at + UUID_BYTES > end) throw new Error('malformed usage message: truncated');
    const id = value.toString('latin1', at, at + UUID_BYTES);
    at += UUID_BYTES;
    const orgId = varint();
    const subscriptionItemId = varint();
    const quantityEnd = at + 1 + (value[at] ?? 0);
    if (quantityEnd + 2 * TIME_BYTES > end) throw new Error('malformed usage message: truncated');
    const quantity = value.toString('latin1', at + 1, quantityEnd);
    const occurredAtMs = value.readUIntLE(quantityEnd, TIME_BYTES);
    const recordedAtMs = value.readUIntLE(quantityEnd + TIME_BYTES, TIME_BYTES);
    at = quantityEnd + 2 * TIME_BYTES;
    const keyLength = varint();
    if (at + keyLength > end) throw new Error('malformed usage message: truncated');
    const idempotencyKey = value.toString('utf8', at, at + keyLength);
    at += keyLength;
    if (
      !isUuid(id) ||
      orgId > MAX_ID ||
      subscriptionItemId > MAX_ID ||
      !DECIMAL.test(quantity) ||
      !idempotencyKey
    ) {
      throw new Error(`malformed usage event ending at byte ${at}`);
    }
    events.push({ id, orgId, subscriptionItemId, idempotencyKey, quantity, occurredAtMs, recordedAtMs });
  }
  return events;
}

/**
 * The events of one message, in either format (compact by its version byte, or the text format).
 * Throws on anything else, a void message included: the sinks log it and skip it.
 */
export function decodeLogMessage(value: Buffer | string | null): UsageEventRecord[] {
  const { events, voids } = decodeLogEntries(value);
  if (voids.length) throw new Error('a usage void message, not events');
  return events;
}

/** The events of a message in the text format (usage/1). */
function decodeTextEvents(text: string): UsageEventRecord[] {
  const lines = text.split('\n');
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

/**
 * What one log message holds: events or voids. The one decoder of the usage log: every consumer
 * (the sinks, and the listeners they run) reads messages through it, whichever format wrote them.
 * Throws on anything else.
 */
export function decodeLogEntries(value: Buffer | string | null): {
  events: UsageEventRecord[];
  voids: UsageVoidRecord[];
} {
  if (value === null) throw new Error('usage message without a value');
  if (typeof value !== 'string' && value[0] === LOG_VERSION) {
    return { events: decodeCompactEvents(value), voids: [] };
  }
  const text = value.toString();
  if (text.startsWith(`${VOID_FORMAT}\n`)) {
    const voids: UsageVoidRecord[] = [];
    const lines = text.split('\n');
    for (let i = 1; i < lines.length; i++) {
      const [id, org, item, quantity, occurred, recorded, voided, idempotencyKey] = lines[i]!.split('\t', 8);
      const event = eventOfFields(id, org, item, quantity, occurred, recorded, idempotencyKey);
      if (!event || !voided || !INTEGER.test(voided))
        throw new Error(`malformed usage void on line ${i + 1}`);
      voids.push({ event, voidedAtMs: Number(voided) });
    }
    return { events: [], voids };
  }
  return { events: decodeTextEvents(text), voids: [] };
}
