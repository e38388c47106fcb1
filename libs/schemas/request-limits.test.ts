import { describe, expect, it } from 'vitest';
import { fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from '../errors/index.js';
import { CreateCreditNote, SubscriptionChangeRequest } from './index.js';

/** The `details` a body would answer: [field, code] of each failing field; [] when it is taken. */
function detailsOf(schema: typeof SubscriptionChangeRequest | typeof CreateCreditNote, body: unknown) {
  const parsed = schema.safeParse(body, ZOD_PARSE_OPTIONS);
  return parsed.success ? [] : fieldErrorsFromZod(parsed.error.issues).map((e) => [e.field, e.code]);
}

describe('a subscription change', () => {
  const change = (items: unknown[]) => detailsOf(SubscriptionChangeRequest, { items });

  it('takes a quantity from 1 to 1,000,000', () => {
    expect(change([{ id: 1, quantity: 1 }])).toEqual([]);
    expect(change([{ id: 1, quantity: 1_000_000 }])).toEqual([]);
    expect(change([{ id: 1, quantity: 1_000_001 }])).toEqual([['items.0.quantity', 'out_of_range']]);
    expect(change([{ id: 1, quantity: 0 }])).toEqual([['items.0.quantity', 'out_of_range']]);
  });

  it('takes 1 to 100 items', () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ product_id: i + 1 }));
    expect(change(items(100))).toEqual([]);
    expect(change(items(101))).toEqual([['items', 'too_long']]);
    expect(change([])).toEqual([['items', 'too_short']]);
  });

  it('names an id past 2^53 once, as out of range', () => {
    expect(change([{ id: 2 ** 60 }])).toEqual([['items.0.id', 'out_of_range']]);
    expect(change([{ product_id: 2 ** 60 }])).toEqual([['items.0.product_id', 'out_of_range']]);
  });

  it('names an item kept twice at its second place, and an item with both or neither id', () => {
    expect(change([{ id: 7 }, { id: 8 }, { id: 7 }])).toEqual([['items.2.id', 'invalid_value']]);
    expect(change([{ id: 7, product_id: 3 }])).toEqual([['items.0.id', 'invalid_value']]);
    expect(change([{ quantity: 2 }])).toEqual([['items.0.id', 'invalid_value']]);
  });
});

describe('a credit note', () => {
  const note = (fields: Record<string, unknown>) =>
    detailsOf(CreateCreditNote, {
      reason: 'other',
      lines: [{ invoice_item_id: 1, amount: '1.00' }],
      ...fields,
    });

  it('takes 1 to 100 lines and a memo of at most 1000 characters', () => {
    const lines = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ invoice_item_id: i + 1, amount: '1' }));
    expect(note({ lines: lines(100) })).toEqual([]);
    expect(note({ lines: lines(101) })).toEqual([['lines', 'too_long']]);
    expect(note({ memo: 'm'.repeat(1000) })).toEqual([]);
    expect(note({ memo: 'm'.repeat(1001) })).toEqual([['memo', 'too_long']]);
  });
});
