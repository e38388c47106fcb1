import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  billingNowFlag,
  booleanFlag,
  booleanValue,
  fieldsOf,
  idFlag,
  integerFlag,
  jsonFlag,
  referenceFlag,
  textFlag,
} from './flags.js';

/** What a schema makes of a flag: its value, or the messages of its refusal. */
function read<T extends z.ZodType>(schema: T, value: unknown) {
  const parsed = schema.safeParse(value);
  return parsed.success ? { value: parsed.data } : { refused: parsed.error.issues.map((i) => i.message) };
}

describe('integerFlag', () => {
  it('takes its bounds themselves and refuses one past either', () => {
    const flag = integerFlag(2, 5);
    expect(read(flag, '2')).toEqual({ value: 2 });
    expect(read(flag, '5')).toEqual({ value: 5 });
    expect(read(flag, '1')).toMatchObject({ refused: [expect.stringMatching(/2/)] });
    expect(read(flag, '6')).toMatchObject({ refused: [expect.stringMatching(/5/)] });
  });

  it('refuses anything but digits alone: a sign, a suffix, a prefix, nothing', () => {
    const digitsOnly = 'Must be a whole number written in digits (0-9).';
    for (const text of ['-1', '12x', 'x12', '', '1 ', '+3'])
      expect(read(integerFlag(0), text), JSON.stringify(text)).toEqual({ refused: [digitsOnly] });
    expect(read(integerFlag(0), '007')).toEqual({ value: 7 });
  });

  it('reaches 2^53 - 1 by default and no further', () => {
    expect(read(integerFlag(0), '9007199254740991')).toEqual({ value: Number.MAX_SAFE_INTEGER });
    expect(read(integerFlag(0), '9007199254740992')).toHaveProperty('refused');
  });

  it('idFlag starts at 1: no record has id 0', () => {
    expect(read(idFlag, '1')).toEqual({ value: 1 });
    expect(read(idFlag, '0')).toHaveProperty('refused');
  });
});

describe('text flags', () => {
  it('textFlag refuses an empty value and takes one character', () => {
    expect(read(textFlag, '')).toHaveProperty('refused');
    expect(read(textFlag, 'x')).toEqual({ value: 'x' });
  });

  it('referenceFlag takes 1 to 255 characters', () => {
    expect(read(referenceFlag, '')).toHaveProperty('refused');
    expect(read(referenceFlag, 'r'.repeat(255))).toEqual({ value: 'r'.repeat(255) });
    expect(read(referenceFlag, 'r'.repeat(256))).toHaveProperty('refused');
  });
});

describe('booleanValue', () => {
  it('reads the flag alone and "true" as true, "false" as false, and refuses the rest', () => {
    expect(read(booleanValue, true)).toEqual({ value: true });
    expect(read(booleanValue, 'true')).toEqual({ value: true });
    expect(read(booleanValue, 'false')).toEqual({ value: false });
    for (const text of ['yes', 'TRUE', '1', '0', ''])
      expect(read(booleanValue, text), text).toEqual({ refused: ['Must be true or false.'] });
  });

  it('booleanFlag is false when left out', () => {
    expect(read(booleanFlag, undefined)).toEqual({ value: false });
    expect(read(booleanFlag, 'false')).toEqual({ value: false });
    expect(read(booleanFlag, true)).toEqual({ value: true });
  });
});

describe('jsonFlag', () => {
  const items = jsonFlag(z.array(z.object({ id: z.number() })));

  it('parses the JSON, then checks it against the schema', () => {
    expect(read(items, '[{"id": 1}, {"id": 2}]')).toEqual({ value: [{ id: 1 }, { id: 2 }] });
    expect(read(items, '[{"id": "1"}]')).toHaveProperty('refused');
  });

  it('refuses text that is not JSON, saying so', () => {
    expect(read(items, '[{id: 1}]')).toEqual({ refused: ['must be valid JSON'] });
  });
});

describe('fieldsOf', () => {
  it('names each field by its flag in snake_case, every dash included, leaving out none', () => {
    expect(
      fieldsOf({ name: 'N', 'contact-name': undefined, 'a-b-c': 3 }, ['name', 'contact-name', 'a-b-c']),
    ).toEqual({ name: 'N', contact_name: undefined, a_b_c: 3 });
    expect(Object.keys(fieldsOf({ 'a-b-c': 1, other: 2 }, ['a-b-c']))).toEqual(['a_b_c']);
  });
});

describe('billingNowFlag', () => {
  const NOW = Date.UTC(2026, 4, 10, 12, 0, 0);
  afterEach(() => {
    vi.useRealTimers();
  });

  it('takes up to 5 minutes ahead of this clock (skew), and refuses a millisecond more', () => {
    vi.useFakeTimers({ now: NOW, toFake: ['Date'] });
    const atSkew = new Date(NOW + 5 * 60_000).toISOString();
    expect(read(billingNowFlag, atSkew)).toEqual({ value: new Date(NOW + 5 * 60_000) });
    expect(read(billingNowFlag, new Date(NOW + 5 * 60_000 + 1).toISOString())).toEqual({
      refused: ['Must not be in the future: a period is invoiced only once it has ended.'],
    });
    expect(read(billingNowFlag, '2026-05-01')).toEqual({ value: new Date(Date.UTC(2026, 4, 1)) });
  });
});
