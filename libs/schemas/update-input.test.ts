import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { updateInputOf } from './update-input.js';

const Create = z.strictObject({
  name: z.string().min(1),
  country: z.string().length(2).default('CA'),
  tax_exempt: z.boolean().default(false),
  email: z.string().nullish(),
});
const Update = updateInputOf(Create);

describe('updateInputOf', () => {
  it('leaves out what is not given, where .partial() would fill in the defaults', () => {
    expect(Create.partial().parse({})).toEqual({ country: 'CA', tax_exempt: false });
    expect(Update.parse({})).toEqual({});
    expect(Update.parse({ tax_exempt: true, email: null })).toEqual({ tax_exempt: true, email: null });
  });

  it("keeps each field's rules and refuses unknown fields", () => {
    expect(Update.safeParse({ name: '' }).success).toBe(false);
    expect(Update.safeParse({ country: 'CAN' }).success).toBe(false);
    expect(Update.safeParse({ colour: 'red' }).success).toBe(false);
  });
});
