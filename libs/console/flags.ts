import { z } from 'zod';
import { instantInput } from '../billing/index.js';

/** Flag value helpers: every flag arrives as a string (or `true` when given without a value). */
/**
 * A whole number written in decimal digits only: what Number() would also read ("1e3", "0x1",
 * " 1", "1.0") is refused rather than taken for another number. Digits are always an integer, and
 * a value past 2^53 fails `max` once.
 */
export const integerFlag = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .regex(/^\d+$/, 'Must be a whole number written in digits (0-9).')
    .transform(Number)
    .pipe(z.number().min(min).max(max));
export const idFlag = integerFlag(1);
export const textFlag = z.string().min(1);
/** `--reference`: names one payment, refund or credit, so a repeated command records nothing new. */
export const referenceFlag = z.string().min(1).max(255);
/** `--flag`, `--flag true` or `--flag false`; anything else names the two values it takes. */
export const booleanValue = z.union([z.literal(true), z.string()]).transform((value, ctx) => {
  if (value === true || value === 'true') return true;
  if (value === 'false') return false;
  ctx.addIssue({ code: 'custom', message: 'Must be true or false.' });
  return z.NEVER;
});
export const booleanFlag = booleanValue.default(false);
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

/**
 * The body fields the `names` flags set: each field is its flag in snake_case (`contact-name` ->
 * `contact_name`), the inverse of how refusals name a flag. A flag not given stays undefined.
 */
export function fieldsOf<F extends Record<string, unknown>>(
  flags: F,
  names: readonly (keyof F & string)[],
): Record<string, unknown> {
  return Object.fromEntries(names.map((flag) => [flag.replaceAll('-', '_'), flags[flag]]));
}

/** A clock a little ahead of this machine's is still "now"; a later year is a typo. */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * `--now` of commands that invoice: at most the present. A period is invoiced once it has ended,
 * and one invoiced early can never take the usage still to come (nor be billed again), so a
 * mistyped year must not bill months ahead.
 */
export const billingNowFlag = instantInput.refine(
  (instant) => instant.getTime() <= Date.now() + CLOCK_SKEW_MS,
  'Must not be in the future: a period is invoiced only once it has ended.',
);
