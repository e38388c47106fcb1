import { type FieldError, UsageEventValidationError } from '../errors.js';
import type { components } from '../generated/openapi.js';

/** What a caller reports: the service's usage event fields; the reporter fills in the rest. */
export interface UsageEventInput {
  /** A metered subscription item of your organization. */
  subscription_item_id: number;
  /** Greater than zero, at most 1e15, at most 8 fractional digits. */
  quantity: number;
  /** When the usage happened: a Date, or an ISO 8601 date-time with Z or an offset. Default: the moment of `report()`. */
  timestamp?: Date | string;
  /** Your key for this event (1-255 characters). Default: a UUIDv7 made at `report()`. */
  idempotency_key?: string;
}

/**
 * An event as the reporter sends it, every field fixed when it was reported: each retry sends
 * these same bytes, so the service records it once whatever happens to a request.
 */
export type ReportedUsageEvent = Required<
  components['schemas']['CreateUsageEventBatchRequestInput']['events'][number]
>;

/** The event and its JSON, made once at `report()`; `bytes` is the JSON's UTF-8 length. */
export interface PreparedEvent {
  event: ReportedUsageEvent;
  json: string;
  bytes: number;
}

/** The service's bounds (libs/schemas/usage-event.ts): beyond them an event is refused with 422. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
export const MAX_QUANTITY = 1e15;
export const QUANTITY_SCALE = 8;
const EARLIEST_MS = Date.UTC(1970, 0, 1);
const LATEST_MS = Date.UTC(2100, 0, 1);
const FIELDS = new Set(['subscription_item_id', 'quantity', 'timestamp', 'idempotency_key']);

/**
 * Checks an event as the service would and fixes its key and timestamp, or throws
 * UsageEventValidationError naming every failing field. `newKey` makes a key for an event without
 * one; `nowMs` is the moment of the report.
 */
export function prepareUsageEvent(input: unknown, nowMs: number, newKey: () => string): PreparedEvent {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new UsageEventValidationError([
      { field: '', message: 'A usage event is an object.', code: 'invalid_type' },
    ]);
  }
  const fields = input as Record<string, unknown>;
  const problems: FieldError[] = [];
  for (const name of Object.keys(fields)) {
    if (!FIELDS.has(name)) problems.push({ field: name, message: 'Unknown field.', code: 'unknown_field' });
  }
  const item = fields.subscription_item_id;
  if (item === undefined) problems.push(required('subscription_item_id'));
  else if (typeof item !== 'number' || !Number.isSafeInteger(item) || item <= 0) {
    problems.push({
      field: 'subscription_item_id',
      message: 'Must be a positive integer.',
      code: typeof item === 'number' ? 'out_of_range' : 'invalid_type',
    });
  }
  const quantity = fields.quantity;
  const quantityProblem = checkQuantity(quantity);
  if (quantityProblem) problems.push(quantityProblem);
  let timestamp: string | undefined;
  if (fields.timestamp === undefined) timestamp = isoText(nowMs);
  else {
    const parsed = parseTimestamp(fields.timestamp);
    if (typeof parsed === 'string') timestamp = parsed;
    else problems.push(parsed);
  }
  let key = fields.idempotency_key;
  if (key === undefined) key = newKey();
  else {
    const keyProblem = checkKey(key);
    if (keyProblem) problems.push(keyProblem);
  }
  if (problems.length) throw new UsageEventValidationError(problems);

  const event: ReportedUsageEvent = {
    subscription_item_id: item as number,
    quantity: quantity as number,
    timestamp: timestamp!,
    idempotency_key: key as string,
  };
  // Written by hand: JSON.stringify of the object costs several times more, and the numbers were
  // checked finite above (their String() is JSON).
  const json = `{"subscription_item_id":${event.subscription_item_id},"quantity":${event.quantity},"timestamp":"${event.timestamp}","idempotency_key":${JSON.stringify(event.idempotency_key)}}`;
  return { event, json, bytes: utf8Length(json) };
}

function required(field: string): FieldError {
  return { field, message: 'Required.', code: 'required' };
}

function checkQuantity(quantity: unknown): FieldError | undefined {
  if (quantity === undefined) return required('quantity');
  if (typeof quantity !== 'number' || !Number.isFinite(quantity)) {
    return { field: 'quantity', message: 'Must be a finite number.', code: 'invalid_type' };
  }
  if (!(quantity > 0) || quantity > MAX_QUANTITY) {
    return {
      field: 'quantity',
      message: `Must be greater than 0 and at most ${MAX_QUANTITY}.`,
      code: 'out_of_range',
    };
  }
  if (fractionalDigits(quantity) > QUANTITY_SCALE) {
    return {
      field: 'quantity',
      message: `At most ${QUANTITY_SCALE} fractional digits.`,
      code: 'out_of_range',
    };
  }
  return undefined;
}

/** Fractional digits of the shortest decimal that round-trips to q (what goes on the wire). */
export function fractionalDigits(q: number): number {
  const [mantissa = '', exponent = '0'] = String(q).toLowerCase().split('e');
  const fraction = mantissa.split('.')[1] ?? '';
  return Math.max(0, fraction.length - Number(exponent));
}

function checkKey(key: unknown): FieldError | undefined {
  if (typeof key !== 'string') {
    return { field: 'idempotency_key', message: 'Must be a string.', code: 'invalid_type' };
  }
  if (key.length === 0) return { field: 'idempotency_key', message: 'Must not be empty.', code: 'too_short' };
  // Counted in code points, as the service (and Postgres) count them.
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH && [...key].length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    return {
      field: 'idempotency_key',
      message: `Must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`,
      code: 'too_long',
    };
  }
  if (!storableKey(key)) {
    return {
      field: 'idempotency_key',
      message: 'Must not contain control characters or lone surrogates.',
      code: 'invalid_format',
    };
  }
  return undefined;
}

/** No C0, DEL or C1 control character, and no UTF-16 surrogate without its pair. */
function storableKey(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return false;
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = key.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    } else if (code >= 0xdc00 && code <= 0xdfff) return false;
  }
  return true;
}

/** RFC 3339 with a zone, as the service requires: a time without one would be read in the local zone. */
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(\.\d+)?(Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

/** The instant as ISO text in UTC, or the problem with it. */
function parseTimestamp(value: unknown): string | FieldError {
  let ms: number;
  if (value instanceof Date) ms = value.getTime();
  else if (typeof value === 'string') {
    const match = DATE_TIME.exec(value);
    if (!match || !validDay(Number(match[1]), Number(match[2]), Number(match[3]))) {
      return {
        field: 'timestamp',
        message: 'Must be an ISO 8601 date-time with a time zone (Z or ±hh:mm).',
        code: 'invalid_format',
      };
    }
    ms = Date.parse(value);
  } else {
    return { field: 'timestamp', message: 'Must be a Date or an ISO 8601 date-time.', code: 'invalid_type' };
  }
  if (!(ms >= EARLIEST_MS && ms < LATEST_MS)) {
    return {
      field: 'timestamp',
      message: 'Must be between 1970-01-01T00:00:00Z and 2100-01-01T00:00:00Z.',
      code: 'out_of_range',
    };
  }
  return isoText(ms);
}

function validDay(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

let lastIsoMs = Number.NaN;
let lastIso = '';
/** toISOString, remembered for the last millisecond: reports come many to a millisecond. */
function isoText(ms: number): string {
  if (ms !== lastIsoMs) {
    lastIsoMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

/** UTF-8 bytes of a string: its length when it is all ASCII, as generated keys are. */
function utf8Length(text: string): number {
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0x7f) return Buffer.byteLength(text, 'utf8');
  }
  return text.length;
}
