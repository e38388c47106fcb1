import { z } from 'zod';

/** Flag value helpers: every flag arrives as a string (or `true` when given without a value). */
export const idFlag = z.coerce.number().int().positive();
export const textFlag = z.string().min(1);
export const booleanFlag = z
  .union([z.literal(true), z.enum(['true', 'false'])])
  .transform((v) => v === true || v === 'true')
  .default(false);
export const jsonFlag = <T extends z.ZodType>(schema: T) =>
  z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be valid JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema);
