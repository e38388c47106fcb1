import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors/index.js';
import { parseUsageBody, quantityIsInexact } from './body.js';

const parse = (text: string) => parseUsageBody(Buffer.from(text, 'utf8'));

describe('parseUsageBody', () => {
  it('marks exactly the events whose quantity text a double does not hold', () => {
    const body = parse(
      '{"events":[{"quantity":1.5,"idempotency_key":"a,\\"quantity\\":1.00000000000000001"},' +
        '{"quantity":12345678901234.12345678},{"nested":{"quantity":1},"quantity":2.5e-1},' +
        '{"quantity":1.00000000000000001,"quantity":3},{"quantity":3,"quantity":0.100000000000000001}]}',
    ) as { events: object[] };
    expect(body.events.map(quantityIsInexact)).toEqual([false, true, false, false, true]);
  });

  it('marks a single event, and leaves short numbers alone without walking the text', () => {
    expect(quantityIsInexact(parse('{"subscription_item_id":1,"quantity":999999999999999.99}'))).toBe(true);
    expect(quantityIsInexact(parse('{"subscription_item_id":1,"quantity":12345678.12345678}'))).toBe(false);
    expect(quantityIsInexact(parse('{"subscription_item_id":1,"quantity":0.1}'))).toBe(false);
    expect(quantityIsInexact({ quantity: 1 })).toBe(false);
  });

  it('skips a byte-order mark and refuses prototype keys, empty and malformed bodies with a 400', () => {
    expect(parse('\uFEFF{"a":1}')).toEqual({ a: 1 });
    expect(parse('{"constructor":1,"b":{"constructor":{"x":1}}}')).toEqual({
      constructor: 1,
      b: { constructor: { x: 1 } },
    });
    for (const text of ['', '\uFEFF', '{"a":', '{"__proto__":{}}', '[{"constructor":{"prototype":{}}}]']) {
      const error = (() => {
        try {
          parse(text);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error, text).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(400);
    }
  });

  it('checks a deeply nested body for prototype keys without overflowing the stack', () => {
    const nested = (inner: string) => `${'['.repeat(20_000)}${inner}${']'.repeat(20_000)}`;
    expect(() => parse(`{"idempotency_key":"constructor","x":${nested('1')}}`)).not.toThrow();
    expect(() => parse(`{"x":${nested('{"__proto__":{}}')}}`)).toThrow(
      expect.objectContaining({ status: 400, message: 'The request body is not valid JSON.' }),
    );
    expect(() => parse(`{"x":${nested('{"constructor":{"prototype":1}}')}}`)).toThrow(
      expect.objectContaining({ status: 400 }),
    );
  });

  it('reads hostile number literals and nesting in linear time (a 200,000-digit quantity, 2,000 quantities 20,000 deep)', () => {
    const long = parse(`{"subscription_item_id":1,"quantity":1.${'0'.repeat(200_000)}1}`);
    expect(quantityIsInexact(long)).toBe(true);
    const zeros = parse(`{"subscription_item_id":1,"quantity":1.${'0'.repeat(200_000)}}`);
    expect(quantityIsInexact(zeros)).toBe(false);
    const deep = `${'['.repeat(20_000)}{${'"quantity":1234567890123456,'.repeat(2000)}"a":1}${']'.repeat(20_000)}`;
    expect(() => parse(deep)).not.toThrow();
  });

  it('refuses bytes that are not UTF-8 instead of decoding them to U+FFFD, where two keys would become one', () => {
    const withKeyBytes = (...bytes: number[]) =>
      Buffer.concat([
        Buffer.from('{"subscription_item_id":1,"quantity":1,"idempotency_key":"k'),
        Buffer.from(bytes),
        Buffer.from('"}'),
      ]);
    for (const bytes of [[0xff], [0xfe], [0xc3], [0xed, 0xa0, 0x80]]) {
      expect(() => parseUsageBody(withKeyBytes(...bytes)), String(bytes)).toThrow(
        expect.objectContaining({ status: 400, message: 'The request body is not valid UTF-8.' }),
      );
    }
    expect(parseUsageBody(withKeyBytes(0xc3, 0xa9))).toMatchObject({ idempotency_key: 'k\u00e9' });
  });
});
