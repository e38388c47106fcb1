import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CreateCustomer, paginationQuery } from '../schemas/index.js';
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

  it('reports a missing required field as required', () => {
    const result = CreateCustomer.safeParse({}, ZOD_PARSE_OPTIONS);
    expect(fieldErrorsFromZod(result.error!.issues)).toEqual([
      { field: 'name', message: 'Required.', code: 'required' },
    ]);
  });
});
