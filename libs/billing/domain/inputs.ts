import { z } from 'zod';
import { ApiError, fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from '../../errors/index.js';
import { parseMoney } from '../../money/index.js';

/**
 * Input schemas shared by the write side (console, seed): decimals arrive as strings and are kept
 * as exact decimal text. A JSON number is accepted only when it is a whole number JavaScript holds
 * exactly ("quantity": 3): a fraction or a long number may already have lost digits in JSON.parse
 * (99999999999.99999999 arrives as 100000000000), and a bill must not be built on a guess.
 */

const decimalText = (integerDigits: number) =>
  z
    .union([
      z.string(),
      z
        .number()
        .refine(
          Number.isSafeInteger,
          'Send a decimal as a string ("0.002"): as a JSON number it may lose digits.',
        ),
    ])
    .transform((value) => (typeof value === 'number' ? String(value) : value.trim()))
    .pipe(
      z
        .string()
        .regex(
          new RegExp(`^\\d{1,${integerDigits}}(\\.\\d{1,8})?$`),
          `Must be a non-negative decimal with at most ${integerDigits} integer and 8 fractional digits.`,
        ),
    );

/** A money amount, >= 0, fitting NUMERIC(20, 8). */
export const moneyInput = decimalText(12);

/** A unit quantity (included units, tier bounds), >= 0, fitting NUMERIC(38, 8). */
export const quantityInput = decimalText(30);

/** Parses domain input; every problem becomes a 422 entry naming its field. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input, ZOD_PARSE_OPTIONS);
  if (!parsed.success) throw ApiError.validation(fieldErrorsFromZod(parsed.error.issues));
  return parsed.data;
}

const AMOUNT = /^\d{1,12}(\.\d{1,8})?$/;

/**
 * A money amount typed by an operator: a positive decimal with at most 8 fractional digits and
 * 12 integer digits (NUMERIC(20, 8)). Anything else is a 422 naming the field.
 */
export function parseAmount(field: string, text: string, options: { allowZero?: boolean } = {}): bigint {
  if (!AMOUNT.test(text.trim())) {
    throw ApiError.validation([
      {
        field,
        message: 'Must be a decimal number with at most 12 integer and 8 fractional digits, e.g. 49.99.',
        code: 'invalid_format',
      },
    ]);
  }
  const value = parseMoney(text.trim());
  if (value === 0n && !options.allowZero) {
    throw ApiError.validation([{ field, message: 'Must be greater than zero.', code: 'out_of_range' }]);
  }
  return value;
}

/** An instant typed by an operator: an ISO 8601 date-time with offset, or a date (midnight UTC). */
export const instantInput = z.string().transform((text, ctx) => {
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text;
  const fields =
    /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/.exec(iso);
  const instant = new Date(iso);
  if (!fields || !existingFields(fields) || Number.isNaN(instant.getTime())) {
    ctx.addIssue({
      code: 'custom',
      message: 'Must be an ISO 8601 date-time with offset (2026-03-01T00:00:00Z) or a date.',
    });
    return z.NEVER;
  }
  return instant;
});

/**
 * Whether the typed calendar and clock fields exist: Date rolls 2026-09-31 over to October 1st and
 * 24:00 to the next day, and an operator who typed them meant neither.
 */
function existingFields(fields: RegExpExecArray): boolean {
  const [, year, month, day, hour, minute, second, offsetHours, offsetMinutes] = Array.from(fields, (field) =>
    Number(field ?? 0),
  );
  const date = new Date(Date.UTC(year!, month! - 1, day!));
  return (
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month! - 1 &&
    date.getUTCDate() === day &&
    hour! <= 23 &&
    minute! <= 59 &&
    second! <= 59 &&
    offsetHours! <= 23 &&
    offsetMinutes! <= 59
  );
}
