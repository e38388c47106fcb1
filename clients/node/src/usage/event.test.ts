import { describe, expect, it } from 'vitest';
import { UsageEventValidationError } from '../errors.js';
import { prepareUsageEvent } from './event.js';

const NOW = Date.parse('2026-11-20T10:00:00.123Z');
const prepare = (input: unknown) => prepareUsageEvent(input, NOW, () => 'generated-key');

/** The fields an invalid event is refused for, as `details` names them. */
function refusal(input: unknown): { field: string; code: string }[] {
  try {
    prepare(input);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageEventValidationError);
    return (error as UsageEventValidationError).details.map(({ field, code }) => ({ field, code }));
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
}

describe('prepareUsageEvent', () => {
  it('fixes the key and the timestamp when the event is reported, and writes the JSON once', () => {
    const prepared = prepare({ subscription_item_id: 7, quantity: 2.5 });
    expect(prepared.event).toEqual({
      subscription_item_id: 7,
      quantity: 2.5,
      timestamp: '2026-11-20T10:00:00.123Z',
      idempotency_key: 'generated-key',
    });
    expect(JSON.parse(prepared.json)).toEqual(prepared.event);
    expect(prepared.bytes).toBe(Buffer.byteLength(prepared.json));
  });

  it("keeps the caller's key, and counts bytes of one that is not ASCII", () => {
    const key = 'commande-é-"quoted"-\\-😀';
    const prepared = prepare({ subscription_item_id: 1, quantity: 1, idempotency_key: key });
    expect(prepared.event.idempotency_key).toBe(key);
    expect(JSON.parse(prepared.json).idempotency_key).toBe(key);
    expect(prepared.bytes).toBe(Buffer.byteLength(prepared.json));
    expect(prepared.bytes).toBeGreaterThan(prepared.json.length);
    // a character of two UTF-8 bytes (and none of more) counts two bytes too
    const latin = prepare({ subscription_item_id: 1, quantity: 1, idempotency_key: 'café' });
    expect(latin.bytes).toBe(Buffer.byteLength(latin.json));
    expect(latin.bytes).toBe(latin.json.length + 1);
  });

  it('takes a Date or a date-time with a zone, sent as the same instant in UTC', () => {
    const at = (timestamp: unknown) =>
      prepare({ subscription_item_id: 1, quantity: 1, timestamp }).event.timestamp;
    expect(at(new Date('2026-11-01T00:00:00Z'))).toBe('2026-11-01T00:00:00.000Z');
    expect(at('2026-11-01T02:30:00+02:00')).toBe('2026-11-01T00:30:00.000Z');
    expect(at('2028-02-29T23:59:59.999Z')).toBe('2028-02-29T23:59:59.999Z');
    expect(at('1970-01-01T00:00:00Z')).toBe('1970-01-01T00:00:00.000Z');
  });

  it("keeps each event's own millisecond, for events reported within the same second", () => {
    const at = (nowMs: number, timestamp?: string) =>
      prepareUsageEvent({ subscription_item_id: 1, quantity: 1, timestamp }, nowMs, () => 'k').event
        .timestamp;
    expect(at(NOW)).toBe('2026-11-20T10:00:00.123Z');
    expect(at(NOW + 1)).toBe('2026-11-20T10:00:00.124Z');
    expect(at(NOW, '2026-11-20T10:00:00.500Z')).toBe('2026-11-20T10:00:00.500Z');
    expect(at(NOW + 1)).toBe('2026-11-20T10:00:00.124Z');
  });

  it('refuses a missing subscription_item_id, synchronously, naming it', () => {
    expect(() => prepare({ quantity: 1 })).toThrow(UsageEventValidationError);
    expect(refusal({ quantity: 1 })).toEqual([{ field: 'subscription_item_id', code: 'required' }]);
    for (const item of [0, -3, 1.5, 2 ** 53, '7', null]) {
      expect(refusal({ subscription_item_id: item, quantity: 1 })[0]?.field, String(item)).toBe(
        'subscription_item_id',
      );
    }
  });

  it('refuses a quantity of 0 or less, not finite, above 1e15, or with more than 8 decimals', () => {
    for (const quantity of [
      0,
      -1,
      -0,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      1e15 + 1,
      0.000000001,
      1.123456789,
      '1',
    ]) {
      expect(refusal({ subscription_item_id: 1, quantity }), String(quantity)).toEqual([
        { field: 'quantity', code: expect.any(String) },
      ]);
    }
    expect(refusal({ subscription_item_id: 1 })).toEqual([{ field: 'quantity', code: 'required' }]);
    for (const quantity of [1e15, 0.00000001, 12345678.12345678, 3]) {
      expect(prepare({ subscription_item_id: 1, quantity }).event.quantity).toBe(quantity);
    }
  });

  it('refuses a key over 255 characters, counted in code points as the service counts them', () => {
    expect(refusal({ subscription_item_id: 1, quantity: 1, idempotency_key: 'k'.repeat(256) })).toEqual([
      { field: 'idempotency_key', code: 'too_long' },
    ]);
    expect(
      prepare({ subscription_item_id: 1, quantity: 1, idempotency_key: 'k'.repeat(255) }).event,
    ).toBeDefined();
    // 255 emoji are 510 UTF-16 units, yet 255 characters
    expect(
      prepare({ subscription_item_id: 1, quantity: 1, idempotency_key: '😀'.repeat(255) }).event,
    ).toBeDefined();
    expect(refusal({ subscription_item_id: 1, quantity: 1, idempotency_key: '😀'.repeat(256) })).toEqual([
      { field: 'idempotency_key', code: 'too_long' },
    ]);
  });

  it('refuses an empty key, one with control characters or a lone surrogate, and one that is not a string', () => {
    for (const key of ['', 'a\u0000b', 'tab\there', 'del\u007f', 'c1\u0085', 'lone\ud800', '\udc00x', 12]) {
      expect(
        refusal({ subscription_item_id: 1, quantity: 1, idempotency_key: key })[0]?.field,
        JSON.stringify(key),
      ).toBe('idempotency_key');
    }
  });

  it('refuses a timestamp without a zone, an impossible day, or outside 1970-2099', () => {
    for (const timestamp of [
      '2026-11-01T10:00:00',
      '2026-11-01',
      '2026-02-29T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-11-01T24:00:00Z',
      // the service's zone is Z or ±hh:mm, nothing shorter
      '2026-11-01T02:00:00+0200',
      '2026-11-01T02:00:00+02',
      '2026-11-01T02:00Z',
      '1969-12-31T23:59:59Z',
      '2100-01-01T00:00:00Z',
      new Date(Number.NaN),
      Date.parse('2026-11-01T00:00:00Z'),
    ]) {
      expect(refusal({ subscription_item_id: 1, quantity: 1, timestamp })[0]?.field, String(timestamp)).toBe(
        'timestamp',
      );
    }
  });

  it('refuses a day or month that does not exist as a malformed date-time, not as one out of range', () => {
    for (const timestamp of [
      '2026-13-01T00:00:00Z',
      '2026-00-10T00:00:00Z',
      '2026-11-00T00:00:00Z',
      '2026-02-29T00:00:00Z',
    ]) {
      expect(refusal({ subscription_item_id: 1, quantity: 1, timestamp }), timestamp).toEqual([
        { field: 'timestamp', code: 'invalid_format' },
      ]);
    }
    expect(refusal({ subscription_item_id: 1, quantity: 1, timestamp: '2100-01-01T00:00:00Z' })).toEqual([
      { field: 'timestamp', code: 'out_of_range' },
    ]);
    // any number of fractional digits, as the service takes them; sent to the millisecond
    expect(
      prepare({ subscription_item_id: 1, quantity: 1, timestamp: '2026-11-01T02:00:00.123456+02:00' }).event
        .timestamp,
    ).toBe('2026-11-01T00:00:00.123Z');
  });

  it('refuses a minute, second or zone offset past its range as a malformed date-time, as the service does', () => {
    for (const timestamp of [
      '2026-11-01T10:60:00Z',
      '2026-11-01T10:00:60Z',
      '2026-11-01T10:00:00+24:00',
      '2026-11-01T10:00:00-23:60',
    ]) {
      expect(refusal({ subscription_item_id: 1, quantity: 1, timestamp }), timestamp).toEqual([
        { field: 'timestamp', code: 'invalid_format' },
      ]);
    }
    // the last minute and second of the day, in the widest zones
    expect(
      prepare({ subscription_item_id: 1, quantity: 1, timestamp: '2026-11-01T23:59:59+23:59' }).event
        .timestamp,
    ).toBe('2026-11-01T00:00:59.000Z');
    expect(
      prepare({ subscription_item_id: 1, quantity: 1, timestamp: '2026-11-01T00:00:00-23:59' }).event
        .timestamp,
    ).toBe('2026-11-01T23:59:00.000Z');
  });

  it('takes a key with spaces and printable Latin-1, refusing C1 controls up to U+009F', () => {
    for (const key of ['order 42', 'caf\u00e9', 'nbsp\u00a0x', 'pair-\ud83d\ude00-end']) {
      expect(
        prepare({ subscription_item_id: 1, quantity: 1, idempotency_key: key }).event.idempotency_key,
      ).toBe(key);
    }
    for (const key of [
      'c1-end\u009f',
      'unit-sep\u001f',
      'high-high\ud83d\ud83d',
      'high-then-ascii\ud83dx',
      'high-then-private-use\ud83d\ue000',
    ]) {
      expect(
        refusal({ subscription_item_id: 1, quantity: 1, idempotency_key: key }),
        JSON.stringify(key),
      ).toEqual([{ field: 'idempotency_key', code: 'invalid_format' }]);
    }
  });

  it('takes the first and last characters beyond U+FFFF as pairs, and refuses a lone surrogate at either end of its range', () => {
    for (const key of ['first-\u{10000}', 'last-\u{10ffff}', '\ud800\udfff', '\udbff\udc00']) {
      expect(
        prepare({ subscription_item_id: 1, quantity: 1, idempotency_key: key }).event.idempotency_key,
        JSON.stringify(key),
      ).toBe(key);
    }
    for (const key of ['lone-low-\udfff', 'lone-high-\udbff', 'high-before-high\udbff\ud800', 'x\udc00']) {
      expect(
        refusal({ subscription_item_id: 1, quantity: 1, idempotency_key: key }),
        JSON.stringify(key),
      ).toEqual([{ field: 'idempotency_key', code: 'invalid_format' }]);
    }
  });

  it('says which kind of problem a field has: a wrong type, or a value out of range', () => {
    expect(refusal({ subscription_item_id: '7', quantity: 1 })).toEqual([
      { field: 'subscription_item_id', code: 'invalid_type' },
    ]);
    expect(refusal({ subscription_item_id: 0, quantity: 1 })).toEqual([
      { field: 'subscription_item_id', code: 'out_of_range' },
    ]);
    expect(refusal({ subscription_item_id: 1, quantity: Number.POSITIVE_INFINITY })).toEqual([
      { field: 'quantity', code: 'invalid_type' },
    ]);
    expect(refusal({ subscription_item_id: 1, quantity: -2 })).toEqual([
      { field: 'quantity', code: 'out_of_range' },
    ]);
    expect(refusal({ subscription_item_id: 1, quantity: 1, idempotency_key: 7 })).toEqual([
      { field: 'idempotency_key', code: 'invalid_type' },
    ]);
    expect(refusal({ subscription_item_id: 1, quantity: 1, timestamp: 0 })).toEqual([
      { field: 'timestamp', code: 'invalid_type' },
    ]);
  });

  it('refuses a null timestamp or key, as the service does, rather than filling in its own', () => {
    expect(refusal({ subscription_item_id: 1, quantity: 1, timestamp: null })).toEqual([
      { field: 'timestamp', code: 'invalid_type' },
    ]);
    expect(refusal({ subscription_item_id: 1, quantity: 1, idempotency_key: null })).toEqual([
      { field: 'idempotency_key', code: 'invalid_type' },
    ]);
    expect(refusal({ subscription_item_id: null, quantity: null })).toEqual([
      { field: 'subscription_item_id', code: 'invalid_type' },
      { field: 'quantity', code: 'invalid_type' },
    ]);
  });

  it("throws an error with the service's VALIDATION_ERROR code, its message naming each field", () => {
    try {
      prepare({ subscription_item_id: 0, quantity: 0 });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(TypeError);
      expect(error).toMatchObject({ name: 'UsageEventValidationError', error_code: 'VALIDATION_ERROR' });
      expect((error as Error).message).toMatch(
        /^invalid usage event: subscription_item_id: .+; quantity: .+/,
      );
    }
  });

  it('refuses unknown fields (the service would refuse every such event) and names every problem at once', () => {
    expect(refusal({ subscription_item_id: 1, quantity: 1, quantiy: 2 })).toEqual([
      { field: 'quantiy', code: 'unknown_field' },
    ]);
    expect(refusal({ quantity: -1, idempotency_key: '' }).map((p) => p.field)).toEqual([
      'subscription_item_id',
      'quantity',
      'idempotency_key',
    ]);
    expect(refusal(null)).toEqual([{ field: '', code: 'invalid_type' }]);
    expect(refusal([1, 2])).toEqual([{ field: '', code: 'invalid_type' }]);
  });
});
