import { describe, expect, it } from 'vitest';
import { ApiError } from '../../errors/index.js';
import { mayHoldLongNumber, parseUsageBody, quantityIsInexact } from './body.js';

const parse = (text: string) => parseUsageBody(Buffer.from(text, 'utf8'));

describe('parseUsageBody', () => {
  it('marks exactly the events whose quantity text a double does not hold', () => {
    const body = parse(
      '{"events":[{"quantity":1.5,"idempotency_key":"a,\\"quantity\\":1.00000000000000001"},' +
        '{"quantity":12345678901234.12345678},{"nested":{"quantity":1},"quantity":2.5e-1},' +
        '{"quantity":1.00000000000000001,"quantity":3},{"quantity":3,"quantity":0.100000000000000001}]}',
    ) as { events: object[] };
    expect(body.events.map(quantityIsInexact)).toEqual([false, true, false, false, true]);
    // an array under another key is no batch: its quantities mark none of the events
    const other = parse(
      '{"events":[{"quantity":1},{"quantity":2}],"other":[{"quantity":1.00000000000000001},{"quantity":3}]}',
    ) as { events: object[] };
    expect(other.events.map(quantityIsInexact)).toEqual([false, false]);
  });

  it('reads an escaped quote as part of its string, so brackets inside a string move no event', () => {
    const body = parse(
      '{"events":[{"idempotency_key":"\\"}\\"","quantity":1.00000000000000001},' +
        '{"idempotency_key":"\\"]\\"","quantity":1.5},{"quantity":0.100000000000000001}]}',
    ) as { events: object[] };
    expect(body.events.map(quantityIsInexact)).toEqual([true, false, true]);
    const single = parse('{"idempotency_key":"a\\"{\\"b","quantity":1.00000000000000001}');
    expect(quantityIsInexact(single)).toBe(true);
  });

  it('keeps counting the entries after an empty object, whatever kind the next entry is', () => {
    // an empty object closes while a key is still expected: the string after it is an entry
    const body = parse(
      '{"events":[{"quantity":1,"metadata":{}},"oops",{"quantity":12345678901234.12345678},{}, 7,' +
        '"x",{"quantity":0.100000000000000001}]}',
    ) as { events: unknown[] };
    expect(body.events.map(quantityIsInexact)).toEqual([false, false, true, false, false, false, true]);
  });

  it('counts a batch from a string first entry: an array expects no key, even at its start', () => {
    const body = parse('{"events":["quantity",{"quantity":12345678901234.12345678},{"quantity":2}]}') as {
      events: unknown[];
    };
    expect(body.events.map(quantityIsInexact)).toEqual([false, true, false]);
  });

  it('marks a single event, and leaves short numbers alone without walking the text', () => {
    expect(quantityIsInexact(parse('{"subscription_item_id":1,"quantity":999999999999999.99}'))).toBe(true);
    expect(quantityIsInexact(parse('{"subscription_item_id":1,"quantity":12345678.12345678}'))).toBe(false);
    expect(quantityIsInexact(parse('{"subscription_item_id":1,"quantity":0.1}'))).toBe(false);
    expect(quantityIsInexact({ quantity: 1 })).toBe(false);
  });

  it('reads a quantity with its exponent: one a double overflows or underflows is marked, one it holds is not', () => {
    for (const text of ['1e400', '-1E+400', '1e-400', '1.00000000000000001e5']) {
      expect(quantityIsInexact(parse(`{"subscription_item_id":1,"quantity":${text}}`)), text).toBe(true);
    }
    for (const text of ['1e5', '2.5E-1', '1.5e+300', '100000000000000000000e-20']) {
      expect(quantityIsInexact(parse(`{"subscription_item_id":1,"quantity":${text}}`)), text).toBe(false);
    }
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

  it('says an empty body is empty, and refuses a compressed one with 415 before reading it', () => {
    // docs/decisions.md, Ingest: "compressed 415, not UTF-8 400"
    for (const text of ['', '\uFEFF']) {
      expect(() => parse(text), JSON.stringify(text)).toThrow(ApiError.emptyJsonBody().message);
    }
    expect(() => parse('{"a":')).toThrow(ApiError.invalidJson().message);
    const json = Buffer.from('{"a":1}');
    for (const contentEncoding of ['gzip', ' GZIP ', 'br', 'deflate']) {
      expect(() => parseUsageBody(json, { contentEncoding }), contentEncoding).toThrow(
        expect.objectContaining({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' }),
      );
    }
    // an encoding is refused before the bytes are even checked as UTF-8
    expect(() => parseUsageBody(Buffer.from([0x1f, 0x8b, 0x08, 0xff]), { contentEncoding: 'gzip' })).toThrow(
      expect.objectContaining({ status: 415 }),
    );
    for (const contentEncoding of [undefined, '', 'identity', 'Identity']) {
      expect(parseUsageBody(json, { contentEncoding }), String(contentEncoding)).toEqual({ a: 1 });
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

  it('looks for long numbers exactly where the pattern it replaces matches', () => {
    const pattern = /\d[\d.]{15}|\d[eE]/;
    const cases = [
      '',
      '1234567890123456',
      '123456789012345',
      '.123456789012345.',
      '..1234567890123456',
      '1.2.3.4.5.6.7.8.9',
      'x1.2.3.4.5.6.7.8.',
      '{"quantity":1e5}',
      'e1',
      '1E',
      'a'.repeat(31) + '1234567890123456',
      'a'.repeat(30) + '123456789012345a' + '1'.repeat(15),
    ];
    // A run of 15, 16 or 17 at every offset, alone or after a run too short to match.
    for (let offset = 0; offset < 40; offset++) {
      for (const run of ['1'.repeat(15), '1'.repeat(16), '1'.repeat(17), `.${'2'.repeat(15)}`]) {
        cases.push(`${'a'.repeat(offset)}${run}a`, `${'9'.repeat(offset % 16)}a${'a'.repeat(offset)}${run}`);
      }
    }
    // Random texts over digits, dots, exponents and a few others, of every length around 16 and 32.
    let seed = 7;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = '0123456789.eE"a,';
    for (let i = 0; i < 20_000; i++) {
      let text = '';
      const length = Math.floor(next() * 48);
      for (let j = 0; j < length; j++) {
        text += alphabet[Math.floor(next() * (next() < 0.85 ? 11 : alphabet.length))];
      }
      cases.push(text);
    }
    for (const text of cases) expect(mayHoldLongNumber(text), text).toBe(pattern.test(text));
    expect(cases.filter((text) => pattern.test(text)).length).toBeGreaterThan(1000);
    expect(cases.filter((text) => !pattern.test(text)).length).toBeGreaterThan(1000);
  });
});
