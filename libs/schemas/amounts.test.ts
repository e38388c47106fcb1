import { describe, expect, it } from 'vitest';
import { CreateCreditGrant, CreateCreditNote } from './index.js';

/** The amount a body gives, parsed as each door reads it; undefined where it is refused. */
const doors = {
  'credit grant': (amount: unknown) => {
    const parsed = CreateCreditGrant.safeParse({ amount, category: 'promotional' });
    return parsed.success ? parsed.data.amount : undefined;
  },
  'credit note': (amount: unknown) => {
    const parsed = CreateCreditNote.safeParse({ reason: 'other', lines: [{ invoice_item_id: 1, amount }] });
    return parsed.success ? parsed.data.lines[0]!.amount : undefined;
  },
};

describe('amounts sent to the credit doors', () => {
  for (const [door, amountOf] of Object.entries(doors)) {
    it(`${door}: at most 12 integer and 8 fractional digits (NUMERIC(20, 8)), exact text`, () => {
      expect(amountOf('999999999999.99999999')).toBe('999999999999.99999999');
      expect(amountOf(' 25.5 ')).toBe('25.5');
      expect(amountOf(25)).toBe('25');
      for (const refused of ['1000000000000', '0.000000001', '25.', '.5', '-1', '1e3', 25.5]) {
        expect(amountOf(refused), String(refused)).toBeUndefined();
      }
    });
  }
});
