import { regexes } from 'zod';
import { ApiError, fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from '../../errors/index.js';
import {
  CreateUsageEvent,
  fractionalDigits,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  quantityToDecimal,
  storable,
  USAGE_QUANTITY_SCALE,
  UsageEventBatchEnvelope,
} from '../../schemas/index.js';
import { quantityIsInexact } from '../wire/body.js';
import { EARLIEST_EVENT_MS, LATEST_EVENT_MS } from './event-times.js';

/** A usage event that passed every check that needs no storage. */
export interface ValidUsageEvent {
  subscriptionItemId: number;
  /** Exact decimal text. */
  quantity: string;
  occurredAtMs: number;
  idempotencyKey: string;
}

/**
 * Checks one event's body and resolves its idempotency key (docs/architecture.md, "Rules of the contract"): the header wins over the
 * body's key; neither is a 400; a key over 255 characters is a 422. Throws ApiError.
 */
export function parseUsageEvent(
  body: unknown,
  headerKey: string | undefined,
  receivedAtMs: number,
): ValidUsageEvent {
  return parseEvent(body, headerKey, receivedAtMs, 'request');
}

/** As parseUsageEvent, for one event of a batch: it carries its own key only (no header). */
export function parseBatchedUsageEvent(body: unknown, receivedAtMs: number): ValidUsageEvent {
  return parseEvent(body, undefined, receivedAtMs, 'batch');
}

/** Where an event's key may come from: the request (header or body), or the event of a batch. */
type KeySource = 'request' | 'batch';

function parseEvent(
  body: unknown,
  headerKey: string | undefined,
  receivedAtMs: number,
  source: KeySource,
): ValidUsageEvent {
  const inexact = quantityIsInexact(body);
  let event = inexact ? undefined : wellFormedEvent(body);
  if (!event) {
    const parsed = CreateUsageEvent.safeParse(body, ZOD_PARSE_OPTIONS);
    const problems = parsed.success ? [] : fieldErrorsFromZod(parsed.error.issues);
    if (inexact && !problems.some((problem) => problem.field === 'quantity')) {
      problems.push({
        field: 'quantity',
        message: `Has more digits than a JSON number keeps exactly; send at most 15 significant digits (and at most ${USAGE_QUANTITY_SCALE} after the point).`,
        code: 'invalid_format',
      });
    }
    if (!parsed.success || problems.length) throw ApiError.validation(problems);
    event = parsed.data;
  }

  const idempotencyKey = resolveIdempotencyKey(headerKey, event.idempotency_key, source);

  let occurredAtMs = receivedAtMs;
  if (event.timestamp !== undefined) {
    occurredAtMs = Date.parse(event.timestamp);
    // outside it is a client error, not a poison message for the sinks
    if (!(occurredAtMs >= EARLIEST_EVENT_MS && occurredAtMs < LATEST_EVENT_MS)) {
      throw ApiError.validation([
        {
          field: 'timestamp',
          message: 'Must be between 1970-01-01T00:00:00Z and 2100-01-01T00:00:00Z.',
          code: 'out_of_range',
        },
      ]);
    }
  }
  return {
    subscriptionItemId: event.subscription_item_id,
    quantity: decimalText(event.quantity),
    occurredAtMs,
    idempotencyKey,
  };
}

const FIELDS = new Set(['subscription_item_id', 'quantity', 'timestamp', 'idempotency_key']);
const MAX_QUANTITY = 1e15;
/** The very pattern CreateUsageEvent's `z.iso.datetime({ offset: true })` checks a timestamp with. */
const DATE_TIME = regexes.datetime({ offset: true });

/**
 * The hot path's shortcut past zod: a body that zod would certainly accept, checked by hand, or
 * undefined, and zod decides (and words the errors). Every check here is one of CreateUsageEvent's
 * (the timestamp with zod's own pattern), so the shortcut never accepts what zod refuses and gives
 * what zod gives (request.test.ts compares the two on generated bodies).
 */
export function wellFormedEvent(body: unknown): CreateUsageEvent | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const fields = body as Record<string, unknown>;
  for (const name in fields) if (!FIELDS.has(name)) return undefined;
  const { subscription_item_id: item, quantity, timestamp, idempotency_key: key } = fields;
  if (typeof item !== 'number' || !Number.isSafeInteger(item) || item <= 0) return undefined;
  if (typeof quantity !== 'number' || !(quantity > 0) || quantity > MAX_QUANTITY) return undefined;
  if (shortFractionalDigits(quantity) > USAGE_QUANTITY_SCALE) return undefined;
  if (timestamp !== undefined && (typeof timestamp !== 'string' || !DATE_TIME.test(timestamp))) {
    return undefined;
  }
  // A key over 255 UTF-16 units may still be 255 characters: zod counts those.
  if (
    key !== undefined &&
    (typeof key !== 'string' || key.length < 1 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
  ) {
    return undefined;
  }
  // zod's output: the fields in the schema's order, the absent ones left out
  const event: CreateUsageEvent = { subscription_item_id: item, quantity };
  if (timestamp !== undefined) event.timestamp = timestamp;
  if (key !== undefined) event.idempotency_key = key;
  return event;
}

/**
 * fractionalDigits for the usual number, whose shortest text has no exponent; the general (and
 * slower) function otherwise. Same answer either way.
 */
function shortFractionalDigits(q: number): number {
  const text = String(q);
  if (text.includes('e')) return fractionalDigits(q);
  const dot = text.indexOf('.');
  return dot < 0 ? 0 : text.length - dot - 1;
}

/** The exact decimal text of a valid quantity: its shortest text when that has no exponent. */
function decimalText(q: number): string {
  const text = String(q);
  return text.includes('e') ? quantityToDecimal(q) : text;
}

function resolveIdempotencyKey(
  headerKey: string | undefined,
  bodyKey: string | undefined,
  source: KeySource,
): string {
  const fromHeader = headerKey !== undefined && headerKey !== '';
  const key = fromHeader ? headerKey : bodyKey;
  const field = fromHeader ? 'Idempotency-Key' : 'idempotency_key';
  if (key === undefined) {
    throw ApiError.badRequest(
      source === 'batch'
        ? 'An idempotency key is required: each event of a batch carries its own idempotency_key.'
        : 'An idempotency key is required: send the Idempotency-Key header (or idempotency_key in the body).',
    );
  }
  if (characterCount(key) > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw ApiError.validation([
      { field, message: `Must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`, code: 'too_long' },
    ]);
  }
  if (fromHeader && !PRINTABLE_ASCII.test(key)) {
    // Header values are bytes: servers decode them differently (Node as Latin-1, uWS not at all),
    // and a key stored as something other than what the client meant would not match its retry.
    throw ApiError.validation([
      {
        field,
        message: 'Must be printable ASCII; send a key with other characters as idempotency_key in the body.',
        code: 'invalid_format',
      },
    ]);
  }
  if (hasControlCharacter(key) || !storable(key)) {
    throw ApiError.validation([
      { field, message: 'Must not contain control characters.', code: 'invalid_format' },
    ]);
  }
  return key;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * The identity an event body names, when its item id and key are valid whatever the rest says: a
 * repeated key answers with the stored event even if the repeat's body is otherwise invalid.
 */
export function identityOf(
  body: unknown,
  headerKey: string | undefined,
): { subscriptionItemId: number; idempotencyKey: string } | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { subscription_item_id: item, idempotency_key: bodyKey } = body as Record<string, unknown>;
  if (typeof item !== 'number' || !Number.isSafeInteger(item) || item <= 0) return undefined;
  // A body key that is not a string names no identity, but the header key wins over it anyway.
  const usableBodyKey = typeof bodyKey === 'string' ? bodyKey : undefined;
  try {
    return {
      subscriptionItemId: item,
      idempotencyKey: resolveIdempotencyKey(headerKey, usableBodyKey, 'request'),
    };
  } catch {
    return undefined;
  }
}

/** Characters as Postgres counts them (code points), not UTF-16 units: an emoji is one. */
function characterCount(text: string): number {
  if (text.length <= MAX_IDEMPOTENCY_KEY_LENGTH) return text.length;
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** C0 controls, DEL and C1 controls: a NUL would not even fit in a Postgres text column. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

/** The batch envelope: `{ "events": [...] }` with 1 to 1000 entries, each checked on its own later. */
export function parseUsageEventBatch(body: unknown): unknown[] {
  const parsed = UsageEventBatchEnvelope.safeParse(body, ZOD_PARSE_OPTIONS);
  if (!parsed.success) throw ApiError.validation(fieldErrorsFromZod(parsed.error.issues));
  return parsed.data.events;
}
