import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors/index.js';
import { parseUsageBody, quantityIsInexact } from './body.js';

describe('parseUsageBody', () => {
  it('marks exactly the events whose quantity text a double does not hold', () => {
    const body = parseUsageBody(
      '{"events":[{"quantity":1.5,"idempotency_key":"a,\\"quantity\\":1.00000000000000001"},' +
        '{"quantity":12345678901234.12345678},{"nested":{"quantity":1},"quantity":2.5e-1},' +
        '{"quantity":1.00000000000000001,"quantity":3},{"quantity":3,"quantity":0.100000000000000001}]}',
    ) as { events: object[] };
    expect(body.events.map(quantityIsInexact)).toEqual([false, true, false, false, true]);
  });

  it('marks a single event, and leaves short numbers alone without walking the text', () => {
    expect(
      quantityIsInexact(parseUsageBody('{"subscription_item_id":1,"quantity":999999999999999.99}')),
    ).toBe(true);
    expect(quantityIsInexact(parseUsageBody('{"subscription_item_id":1,"quantity":12345678.12345678}'))).toBe(
      false,
    );
    expect(quantityIsInexact(parseUsageBody('{"subscription_item_id":1,"quantity":0.1}'))).toBe(false);
    expect(quantityIsInexact({ quantity: 1 })).toBe(false);
  });

  it('skips a byte-order mark and refuses prototype keys, empty and malformed bodies with a 400', () => {
    expect(parseUsageBody('\uFEFF{"a":1}')).toEqual({ a: 1 });
    expect(parseUsageBody('{"constructor":1,"b":{"constructor":{"x":1}}}')).toEqual({
      constructor: 1,
      b: { constructor: { x: 1 } },
    });
    for (const text of ['', '\uFEFF', '{"a":', '{"__proto__":{}}', '[{"constructor":{"prototype":{}}}]']) {
      const error = (() => {
        try {
          parseUsageBody(text);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error, text).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(400);
    }
  });
});
