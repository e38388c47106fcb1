import { describe, expect, it } from 'vitest';
import { ApiError } from '../../errors/index.js';
import { CreateUsageEvent } from '../../schemas/index.js';
import { parseUsageBody } from '../wire/body.js';
import {
  identityOf,
  parseBatchedUsageEvent,
  parseUsageEvent,
  parseUsageEventBatch,
  wellFormedEvent,
} from './request.js';

const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);

/** Timestamps zod takes and refuses: zones, leap days, precision, case, separators, other types. */
const TIMESTAMPS: unknown[] = [
  '2026-01-01T00:00:00Z',
  '2026-01-01T00:00:00.123Z',
  '2026-01-01T00:00:00.123456789Z',
  '2026-01-01T23:59:59+05:30',
  '2026-01-01T23:59:59-23:59',
  '2026-01-01T23:59:59+24:00',
  '2026-01-01T00:00:00+0530',
  '2026-01-01T00:00:00+05',
  '2024-02-29T00:00:00Z',
  '2026-02-29T00:00:00Z',
  '2000-02-29T00:00:00Z',
  '1900-02-29T00:00:00Z',
  '2026-04-31T00:00:00Z',
  '2026-12-31T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-00-10T00:00:00Z',
  '2026-01-01T24:00:00Z',
  '2026-01-01T12:60:00Z',
  '2026-01-01T12:00:60Z',
  '2026-01-01T12:00Z',
  '2026-01-01T12:00:00',
  '2026-01-01t12:00:00z',
  '2026-01-01 12:00:00Z',
  '2026-01-01T12:00:00.Z',
  '2026-01-01',
  '+2026-01-01T00:00:00Z',
  '02026-01-01T00:00:00Z',
  '1969-12-31T23:59:59Z',
  '2100-01-01T00:00:00Z',
  '2099-12-31T23:59:59.999Z',
  '0000-01-01T00:00:00Z',
  ' 2026-01-01T00:00:00Z',
  '2026-01-01T00:00:00Z\n',
  'yesterday',
  '',
  1_767_225_600_000,
  null,
  true,
  {},
];

function failure(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

describe('usage event validation', () => {
  it('takes the header key over the body key, and the body key without a header', () => {
    const body = { subscription_item_id: 7, quantity: 2, idempotency_key: 'from-body' };
    expect(parseUsageEvent(body, 'from-header', NOW).idempotencyKey).toBe('from-header');
    expect(parseUsageEvent(body, undefined, NOW).idempotencyKey).toBe('from-body');
    expect(parseUsageEvent(body, '', NOW).idempotencyKey).toBe('from-body');
  });

  it('answers 400 BAD_REQUEST without any key', () => {
    const error = failure(() => parseUsageEvent({ subscription_item_id: 7, quantity: 2 }, undefined, NOW));
    expect(error.code).toBe('BAD_REQUEST');
  });

  it('says where a missing key goes: the header or the body for one event, each event for a batch', () => {
    const single = failure(() => parseUsageEvent({ subscription_item_id: 7, quantity: 2 }, undefined, NOW));
    expect(single.message).toContain('Idempotency-Key header');
    // a batch has no header to take a key from: each of its events carries its own
    const batched = failure(() => parseBatchedUsageEvent({ subscription_item_id: 7, quantity: 2 }, NOW));
    expect(batched.code).toBe('BAD_REQUEST');
    expect(batched.message).toContain('each event of a batch carries its own idempotency_key');
    expect(batched.message).not.toContain('header');
  });

  it('refuses a key over 255 characters with 422, naming where it came from', () => {
    const long = 'k'.repeat(256);
    const fromHeader = failure(() => parseUsageEvent({ subscription_item_id: 7, quantity: 1 }, long, NOW));
    expect(fromHeader.code).toBe('VALIDATION_ERROR');
    expect(fromHeader.details).toEqual([
      expect.objectContaining({ field: 'Idempotency-Key', code: 'too_long' }),
    ]);
    const fromBody = failure(() =>
      parseUsageEvent({ subscription_item_id: 7, quantity: 1, idempotency_key: long }, undefined, NOW),
    );
    expect(fromBody.details).toEqual([
      expect.objectContaining({ field: 'idempotency_key', code: 'too_long' }),
    ]);
    expect(
      parseUsageEvent({ subscription_item_id: 7, quantity: 1 }, 'k'.repeat(255), NOW).idempotencyKey,
    ).toHaveLength(255);
  });

  it('counts a key in characters as Postgres does, not UTF-16 units: 255 emoji are taken, 256 refused', () => {
    // each emoji is two UTF-16 units: 510 units, 255 characters
    const emoji = '😀'.repeat(255);
    expect(
      parseUsageEvent({ subscription_item_id: 7, quantity: 1, idempotency_key: emoji }, undefined, NOW)
        .idempotencyKey,
    ).toBe(emoji);
    const over = failure(() =>
      parseUsageEvent(
        { subscription_item_id: 7, quantity: 1, idempotency_key: `${emoji}😀` },
        undefined,
        NOW,
      ),
    );
    expect(over.details).toEqual([expect.objectContaining({ field: 'idempotency_key', code: 'too_long' })]);
  });

  it('refuses an empty body key with 422 on idempotency_key, alone and in a batch, and takes one character', () => {
    // an empty key would make every keyless retry of an item one event
    const body = { subscription_item_id: 7, quantity: 1, idempotency_key: '' };
    for (const error of [
      failure(() => parseUsageEvent(body, undefined, NOW)),
      failure(() => parseBatchedUsageEvent(body, NOW)),
    ]) {
      expect(error.code).toBe('VALIDATION_ERROR');
      expect(error.details).toEqual([expect.objectContaining({ field: 'idempotency_key' })]);
    }
    expect(parseBatchedUsageEvent({ ...body, idempotency_key: 'k' }, NOW).idempotencyKey).toBe('k');
  });

  it('refuses keys with control characters or lone surrogates', () => {
    for (const key of ['a\u0000b', 'tab\there', 'bad\ud800']) {
      expect(failure(() => parseUsageEvent({ subscription_item_id: 7, quantity: 1 }, key, NOW)).code).toBe(
        'VALIDATION_ERROR',
      );
    }
    // beyond ASCII only in the body: header bytes are decoded differently by each server
    const inHeader = failure(() =>
      parseUsageEvent({ subscription_item_id: 7, quantity: 1 }, 'émoji-😀', NOW),
    );
    expect(inHeader.details?.[0]?.field).toBe('Idempotency-Key');
    // printable ASCII in the header: its ends, the space and the tilde, included
    for (const key of ['space ok', 'tilde~ok']) {
      expect(parseUsageEvent({ subscription_item_id: 7, quantity: 1 }, key, NOW).idempotencyKey).toBe(key);
    }
    // every C0 control (to U+001F), DEL and every C1 control (U+0080 to U+009F): the ends included
    for (const key of ['us\u001f', 'pad\u0080', 'next\u0085line', 'csi\u009b', 'apc\u009f', 'del\u007f']) {
      const inBodyControl = failure(() =>
        parseUsageEvent({ subscription_item_id: 7, quantity: 1, idempotency_key: key }, '', NOW),
      );
      expect(inBodyControl.details, JSON.stringify(key)).toEqual([
        { field: 'idempotency_key', message: 'Must not contain control characters.', code: 'invalid_format' },
      ]);
    }
    // the first characters past each range are printable
    for (const key of ['space ok', 'tilde~ok', 'nbsp\u00a0ok']) {
      expect(
        parseUsageEvent({ subscription_item_id: 7, quantity: 1, idempotency_key: key }, '', NOW)
          .idempotencyKey,
      ).toBe(key);
    }
    expect(
      parseUsageEvent({ subscription_item_id: 7, quantity: 1, idempotency_key: 'nbsp\u00a0ok' }, '', NOW)
        .idempotencyKey,
    ).toBe('nbsp\u00a0ok');
    // a lone surrogate has no UTF-8 form: Postgres could not store the key as sent
    const surrogate = failure(() =>
      parseUsageEvent({ subscription_item_id: 7, quantity: 1, idempotency_key: 'bad\ud800' }, '', NOW),
    );
    expect(surrogate.details).toEqual([
      { field: 'idempotency_key', message: 'Must not contain control characters.', code: 'invalid_format' },
    ]);
    const inBody = parseUsageEvent(
      { subscription_item_id: 7, quantity: 1, idempotency_key: 'émoji-😀' },
      '',
      NOW,
    );
    expect(inBody.idempotencyKey).toBe('émoji-😀');
  });

  it('wants a finite quantity greater than zero with at most 8 fractional digits', () => {
    for (const quantity of [0, -1, '5', null, 1.123456789, 1e16]) {
      const error = failure(() => parseUsageEvent({ subscription_item_id: 7, quantity }, 'k', NOW));
      expect(error.code, String(quantity)).toBe('VALIDATION_ERROR');
      expect(error.details?.[0]?.field).toBe('quantity');
    }
    expect(
      failure(() => parseUsageEvent({ subscription_item_id: 7, quantity: 0.123456789 }, 'k', NOW)).details,
    ).toEqual([{ field: 'quantity', message: 'At most 8 fractional digits.', code: 'out_of_range' }]);
    expect(parseUsageEvent({ subscription_item_id: 7, quantity: 0.00000001 }, 'k', NOW).quantity).toBe(
      '0.00000001',
    );
    expect(parseUsageEvent({ subscription_item_id: 7, quantity: 12.5 }, 'k', NOW).quantity).toBe('12.5');
  });

  it('names a quantity that loses digits once, and only its bound when it also breaks one', () => {
    const body = (text: string) => parseUsageBody(Buffer.from(text));
    const inexact = body('{"subscription_item_id":7,"quantity":12345678901234.12345678}');
    expect(failure(() => parseUsageEvent(inexact, 'k', NOW)).details).toEqual([
      expect.objectContaining({ field: 'quantity', code: 'invalid_format' }),
    ]);
    const tooLarge = body('{"subscription_item_id":7,"quantity":10000000000000000000.5}');
    expect(failure(() => parseUsageEvent(tooLarge, 'k', NOW)).details).toEqual([
      expect.objectContaining({ field: 'quantity', code: 'out_of_range' }),
    ]);
  });

  it('defaults the timestamp to receipt and keeps a given one, within DateTime range', () => {
    expect(parseUsageEvent({ subscription_item_id: 7, quantity: 1 }, 'k', NOW).occurredAtMs).toBe(NOW);
    const given = parseUsageEvent(
      { subscription_item_id: 7, quantity: 1, timestamp: '2026-11-01T10:00:00.250+02:00' },
      'k',
      NOW,
    );
    expect(given.occurredAtMs).toBe(Date.UTC(2026, 10, 1, 8, 0, 0, 250));
    const tooLate = failure(() =>
      parseUsageEvent({ subscription_item_id: 7, quantity: 1, timestamp: '2200-01-01T00:00:00Z' }, 'k', NOW),
    );
    expect(tooLate.details).toEqual([expect.objectContaining({ field: 'timestamp', code: 'out_of_range' })]);
    // [1970-01-01, 2100-01-01): the first instant is in, the horizon itself out (docs/decisions.md, Ingest)
    const at = (timestamp: string) =>
      parseUsageEvent({ subscription_item_id: 7, quantity: 1, timestamp }, 'k', NOW).occurredAtMs;
    expect(at('1970-01-01T00:00:00Z')).toBe(0);
    expect(at('1970-01-01T01:00:00+01:00')).toBe(0);
    expect(at('2099-12-31T23:59:59.999Z')).toBe(Date.UTC(2100, 0, 1) - 1);
    for (const timestamp of [
      '1969-12-31T23:59:59.999Z',
      '2100-01-01T00:00:00Z',
      '2100-01-01T01:00:00+01:00',
    ]) {
      expect(failure(() => at(timestamp)).details, timestamp).toEqual([
        expect.objectContaining({ field: 'timestamp', code: 'out_of_range' }),
      ]);
    }
    expect(
      failure(() =>
        parseUsageEvent({ subscription_item_id: 7, quantity: 1, timestamp: 'yesterday' }, 'k', NOW),
      ).code,
    ).toBe('VALIDATION_ERROR');
  });

  it('rejects unknown fields and a non-object body', () => {
    expect(
      failure(() => parseUsageEvent({ subscription_item_id: 7, quantity: 1, colour: 'red' }, 'k', NOW))
        .details,
    ).toEqual([expect.objectContaining({ field: 'colour', code: 'unknown_field' })]);
    expect(failure(() => parseUsageEvent(undefined, 'k', NOW)).code).toBe('VALIDATION_ERROR');
    expect(failure(() => parseUsageEvent([1], 'k', NOW)).code).toBe('VALIDATION_ERROR');
  });
});

describe('the shortcut past zod', () => {
  it('accepts only bodies zod accepts, with the same output', () => {
    const values = [
      undefined,
      null,
      0,
      -1,
      1,
      7,
      1.5,
      0.1,
      1e-8,
      1e-9,
      1.123456789,
      1e15,
      1e15 + 2,
      2 ** 53,
      Number.MAX_SAFE_INTEGER,
      '',
      'k',
      'x'.repeat(255),
      'x'.repeat(256),
      '2026-01-01T00:00:00Z',
      true,
      [],
      {},
    ];
    let random = 42;
    const next = () => {
      random = (random * 1103515245 + 12345) % 2 ** 31;
      return random;
    };
    // Each field absent a third of the time, else a value of its own kind (valid or not) or any other.
    const own: Record<string, unknown[]> = {
      subscription_item_id: [1, 7, Number.MAX_SAFE_INTEGER, 0, -1, 1.5, 2 ** 53],
      quantity: [1, 1.5, 0.1, 1e-8, 1e15, 0, -1, 1e-9, 1.123456789, 1e15 + 2],
      timestamp: TIMESTAMPS,
      idempotency_key: ['k', 'x'.repeat(255), '', 'x'.repeat(256)],
      extra: [1],
    };
    const pick = (field: string) => {
      const roll = next() % 12;
      if (roll < 4) return undefined;
      const pool = roll < 10 ? own[field]! : values;
      return pool[next() % pool.length];
    };
    let accepted = 0;
    for (let i = 0; i < 20_000; i++) {
      const body: Record<string, unknown> = {};
      for (const field of ['subscription_item_id', 'quantity', 'timestamp', 'idempotency_key', 'extra']) {
        const value = pick(field);
        if (value !== undefined) body[field] = value;
      }
      const fast = wellFormedEvent(body);
      if (!fast) continue;
      accepted++;
      const slow = CreateUsageEvent.safeParse(body);
      expect(slow.success, JSON.stringify(body)).toBe(true);
      expect(fast).toEqual(slow.data);
    }
    expect(accepted).toBeGreaterThan(50);
    // and takes the bodies at each bound itself: one it left to zod would cost zod's time again
    for (const body of [
      { subscription_item_id: Number.MAX_SAFE_INTEGER, quantity: 1e15, idempotency_key: 'x'.repeat(255) },
      { subscription_item_id: 1, quantity: 0.12345678 },
      { subscription_item_id: 1, quantity: 1e-8 },
    ]) {
      expect(wellFormedEvent(body), JSON.stringify(body)).toEqual(CreateUsageEvent.parse(body));
    }
    expect(wellFormedEvent({ subscription_item_id: 3, quantity: 2, idempotency_key: 'k' })).toEqual({
      subscription_item_id: 3,
      quantity: 2,
      idempotency_key: 'k',
    });
  });
});

describe('the timestamp on the shortcut', () => {
  it('is taken exactly when zod takes it, and the answer is the same either way, errors included', () => {
    let taken = 0;
    for (const timestamp of TIMESTAMPS) {
      const body = { subscription_item_id: 3, quantity: 2, timestamp, idempotency_key: 'k' };
      const slow = CreateUsageEvent.safeParse(body);
      const fast = wellFormedEvent(body);
      expect(fast !== undefined, JSON.stringify(timestamp)).toBe(slow.success);
      if (fast) {
        taken++;
        expect(fast).toEqual(slow.data);
      }
      // what a request gets: the event, or the error zod words (the shortcut never words one)
      let answer: unknown;
      try {
        answer = parseUsageEvent(body, undefined, NOW);
      } catch (error) {
        answer = error instanceof ApiError ? { code: error.code, details: error.details } : error;
      }
      if (slow.success) {
        const ms = Date.parse(timestamp as string);
        if (ms >= Date.UTC(1970, 0, 1) && ms < Date.UTC(2100, 0, 1)) {
          expect(answer).toEqual({
            subscriptionItemId: 3,
            quantity: '2',
            occurredAtMs: ms,
            idempotencyKey: 'k',
          });
        } else {
          expect(answer).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: 'timestamp' }] });
        }
      } else {
        expect(answer, JSON.stringify(timestamp)).toEqual({
          code: 'VALIDATION_ERROR',
          details: [expect.objectContaining({ field: 'timestamp' })],
        });
      }
    }
    expect(taken).toBeGreaterThan(8);
  });
});

describe('usage batch envelope', () => {
  it('takes 1 to 1000 events of any shape (each is checked on its own)', () => {
    expect(parseUsageEventBatch({ events: [1, 'x', {}] })).toHaveLength(3);
    expect(parseUsageEventBatch({ events: [{}] })).toHaveLength(1);
    expect(parseUsageEventBatch({ events: new Array(1000).fill({}) })).toHaveLength(1000);
    expect(failure(() => parseUsageEventBatch({ events: [] })).details?.[0]?.field).toBe('events');
    expect(failure(() => parseUsageEventBatch({ events: new Array(1001).fill({}) })).details?.[0]?.code).toBe(
      'too_long',
    );
    expect(failure(() => parseUsageEventBatch({ events: [{}], extra: 1 })).code).toBe('VALIDATION_ERROR');
    expect(failure(() => parseUsageEventBatch(null)).code).toBe('VALIDATION_ERROR');
  });
});

describe('the identity an invalid body names', () => {
  it('is its item and winning key, whatever else the body says', () => {
    const item = { subscription_item_id: 7 };
    expect(identityOf({ ...item, quantity: -1 }, 'h')).toEqual({
      subscriptionItemId: 7,
      idempotencyKey: 'h',
    });
    // the header wins, so a body key the schema refuses does not hide the identity
    for (const bodyKey of [5, null, '', 'k'.repeat(300)]) {
      expect(identityOf({ ...item, idempotency_key: bodyKey }, 'h')).toEqual({
        subscriptionItemId: 7,
        idempotencyKey: 'h',
      });
    }
    expect(identityOf({ ...item, idempotency_key: 'b' }, undefined)?.idempotencyKey).toBe('b');
  });

  it('is none without a valid item id or a usable key', () => {
    expect(identityOf({ subscription_item_id: '7' }, 'h')).toBeUndefined();
    // the item ids the schema refuses name no item
    for (const item of [0, -3, 1.5, 2 ** 53]) {
      expect(identityOf({ subscription_item_id: item }, 'h'), String(item)).toBeUndefined();
    }
    expect(identityOf({ subscription_item_id: 7, idempotency_key: 5 }, undefined)).toBeUndefined();
    expect(identityOf({ subscription_item_id: 7 }, 'k'.repeat(256))).toBeUndefined();
    expect(identityOf([7], 'h')).toBeUndefined();
  });
});
