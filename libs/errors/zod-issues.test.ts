import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CreateCreditNote, CreateCustomer, paginationQuery } from '../schemas/index.js';
import { fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from './zod-issues.js';

describe('field errors from zod', () => {
  it('names each failing body field with a stable code', () => {
    const result = CreateCustomer.safeParse(
      { name: '', email: 'not-an-email', phone: 'x'.repeat(51), colour: 'red' },
      ZOD_PARSE_OPTIONS,
    );
    expect(result.success).toBe(false);
    const errors = fieldErrorsFromZod(result.error!.issues);
    expect(errors).toEqual(
      expect.arrayContaining([
        { field: 'name', message: expect.any(String), code: 'blank' },
        { field: 'email', message: expect.any(String), code: 'invalid_format' },
        { field: 'phone', message: expect.any(String), code: 'too_long' },
        { field: 'colour', message: 'Unknown field.', code: 'unknown_field' },
      ]),
    );
  });

  it('names query parameters and says when a value is out of range', () => {
    const result = paginationQuery.safeParse({ limit: '500', offset: '-1' }, ZOD_PARSE_OPTIONS);
    const errors = fieldErrorsFromZod(result.error!.issues);
    expect(errors.map((e) => [e.field, e.code])).toEqual([
      ['limit', 'out_of_range'],
      ['offset', 'out_of_range'],
    ]);
  });

  it('gives every refinement a listed code: its own params.code, else invalid_value', () => {
    const schema = z.strictObject({
      even: z.number().refine((n) => n % 2 === 0, 'Must be even.'),
      small: z.number().refine((n) => n < 10, { message: 'Too big.', params: { code: 'out_of_range' } }),
      odd: z.number().refine((n) => n % 2 === 1, { message: 'Must be odd.', params: { code: 'made_up' } }),
    });
    const result = schema.safeParse({ even: 1, small: 11, odd: 2 }, ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
      { field: 'even', message: 'Must be even.', code: 'invalid_value' },
      { field: 'small', message: 'Too big.', code: 'out_of_range' },
      { field: 'odd', message: 'Must be odd.', code: 'invalid_value' },
    ]);
  });

  it('keeps each code a client can see when a refinement names it', () => {
    const codes = [
      'required',
      'invalid_type',
      'invalid_format',
      'invalid_value',
      'too_long',
      'too_short',
      'blank',
      'out_of_range',
      'unknown_field',
    ];
    const schema = z.strictObject(
      Object.fromEntries(
        codes.map((code) => [code, z.number().refine(() => false, { message: 'No.', params: { code } })]),
      ),
    );
    const result = schema.safeParse(Object.fromEntries(codes.map((code) => [code, 1])), ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual(
      codes.map((code) => ({ field: code, message: 'No.', code })),
    );
  });

  it('reports a missing required field as required', () => {
    const result = CreateCustomer.safeParse({}, ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
      { field: 'name', message: 'Required.', code: 'required' },
    ]);
  });

  it('names an unknown field inside a list by its whole path', () => {
    const result = CreateCreditNote.safeParse(
      {
        reason: 'other',
        lines: [
          { invoice_item_id: 1, amount: '1' },
          { invoice_item_id: 2, amount: '1', colour: 'red' },
        ],
      },
      ZOD_PARSE_OPTIONS,
    );
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
      { field: 'lines.1.colour', message: 'Unknown field.', code: 'unknown_field' },
    ]);
  });

  it('names a body that is not an object as (body), with the article its type takes', () => {
    for (const [body, message] of [
      [['name'], 'Must be an object.'],
      ['name', 'Must be an object.'],
    ] as const) {
      const result = CreateCustomer.safeParse(body, ZOD_PARSE_OPTIONS);
      expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
        { field: '(body)', message, code: 'invalid_type' },
      ]);
    }
    const result = z.strictObject({ n: z.number() }).safeParse({ n: 'x' }, ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
      { field: 'n', message: 'Must be a number.', code: 'invalid_type' },
    ]);
  });

  it('says whether a numeric bound is inclusive', () => {
    const schema = z.strictObject({
      below: z.number().lt(10),
      atMost: z.number().max(10),
      above: z.number().gt(0),
      atLeast: z.number().min(0),
    });
    const result = schema.safeParse({ below: 10, atMost: 11, above: 0, atLeast: -1 }, ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
      { field: 'below', message: 'Must be less than 10.', code: 'out_of_range' },
      { field: 'atMost', message: 'Must be at most 10.', code: 'out_of_range' },
      { field: 'above', message: 'Must be greater than 0.', code: 'out_of_range' },
      { field: 'atLeast', message: 'Must be at least 0.', code: 'out_of_range' },
    ]);
  });

  it('tells an empty text (blank) from one shorter than a longer minimum (too_short)', () => {
    const schema = z.strictObject({ code: z.string().min(3), name: z.string().min(1) });
    const result = schema.safeParse({ code: 'ab', name: '' }, ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
      { field: 'code', message: 'Must be at least 3 characters.', code: 'too_short' },
      { field: 'name', message: 'Must not be empty.', code: 'blank' },
    ]);
  });

  it('lists the allowed values of an enum of up to 20, not of a longer one', () => {
    const letters = 'abcdefghijklmnopqrstuvwxyz'.split('');
    const schema = z.strictObject({ few: z.enum(letters.slice(0, 20)), many: z.enum(letters.slice(0, 21)) });
    const [few, many] = fieldErrorsFromZod(
      schema.safeParse({ few: 'z', many: 'z' }, ZOD_PARSE_OPTIONS).error!.issues,
    );
    expect(few).toEqual({
      field: 'few',
      message: `Must be one of: ${letters.slice(0, 20).join(', ')}.`,
      code: 'invalid_value',
    });
    expect(many).toMatchObject({ field: 'many', code: 'invalid_value' });
    expect(many!.message).not.toMatch(/^Must be one of: a, b/);
  });
});

describe('field errors from zod: lists, formats and articles', () => {
  it('reports a list with too many or too few items as too_long / too_short, naming the bound', () => {
    const schema = z.strictObject({ many: z.array(z.number()).max(2), few: z.array(z.number()).min(3) });
    const result = schema.safeParse({ many: [1, 2, 3], few: [1] }, ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
      { field: 'many', message: 'Must have at most 2 items.', code: 'too_long' },
      { field: 'few', message: 'Must have at least 3 items.', code: 'too_short' },
    ]);
  });

  it('says "e-mail address" only of an e-mail field; another format keeps its own message', () => {
    const schema = z.strictObject({
      email: z.email(),
      id: z.uuid('Must be a UUID.'),
    });
    const result = schema.safeParse({ email: 'nope', id: 'nope' }, ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
      { field: 'email', message: 'Must be a valid e-mail address.', code: 'invalid_format' },
      { field: 'id', message: 'Must be a UUID.', code: 'invalid_format' },
    ]);
  });

  it('writes "an" before a type starting with any vowel, "a" before the others', () => {
    const schema = z.strictObject({ o: z.object({}), u: z.undefined(), s: z.string() });
    const result = schema.safeParse({ o: 1, u: 1, s: 1 }, ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues).map((e) => e.message)).toEqual([
      'Must be an object.',
      'Must be an undefined.',
      'Must be a string.',
    ]);
  });
});
