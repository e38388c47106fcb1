import { randomUUID } from 'node:crypto';
import { z } from 'zod';

const POSITIVE_INTEGER = /^[1-9][0-9]{0,15}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The integer id a path segment names, or undefined when no record could ever have it. */
export function parseIntegerId(value: number | string): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  if (!POSITIVE_INTEGER.test(value)) return undefined;
  const id = Number(value);
  return Number.isSafeInteger(id) ? id : undefined;
}

/** A UUID in its 8-4-4-4-12 hexadecimal form, either case: the one pattern the project checks ids with. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * The one spelling of a UUID: lower case, as Postgres prints it. Postgres finds a row by a UUID in
 * either case, so an id compared or used as a key in memory must be this spelling, or the row
 * found is not matched with its own parts (an invoice read without its lines). Every way an id
 * comes in (path, query, body, console flags, portal links) canonicalizes it once, here; anything
 * that is not a UUID is left as it is (it names nothing: a 404).
 */
export function canonicalUuid(value: string): string {
  return UUID.test(value) ? value.toLowerCase() : value;
}

/**
 * The request id of an answer (X-Request-ID, the error body's `request_id`): a caller's own
 * X-Request-ID is kept when it is a UUID (the contract's type), lower-cased, so logs on both sides
 * line up; anything else gets a fresh one. Both front ends call this.
 */
export function requestIdFrom(given: unknown): string {
  return typeof given === 'string' && UUID.test(given) ? given.toLowerCase() : newRequestId();
}

/** A fresh request id, for an answer to a request whose headers were never read. */
export function newRequestId(): string {
  return randomUUID();
}

/*
 * Path ids are taken as text and never fail validation: an id that is not a positive integer (or
 * not a UUID) names a record that cannot exist, so the domain answers 404 exactly as for a missing
 * or foreign id (docs/decisions.md). The document still says what a valid id looks like.
 */

/** `{customer_id}`-style path parameter: a positive integer; anything else is a 404. */
export const integerPathId = z.string().meta({
  type: 'integer',
  minimum: 1,
  description: 'A positive integer id. Any other value answers 404, like an id that does not exist.',
});

/** `{invoice_id}`-style path parameter: a UUID in either case (canonicalized); anything else is a 404. */
export const uuidPathId = z.string().overwrite(canonicalUuid).meta({
  format: 'uuid',
  description: 'A UUID, in either case. Any other value answers 404, like an id that does not exist.',
});

/**
 * A query filter naming a record by integer id (`customer_id`): digits only, positive. Unlike a
 * path id, a malformed filter is the caller's mistake to fix, so it is a 422 naming the parameter.
 */
export const integerIdQuery = z
  .string()
  .transform((text, ctx) => {
    const id = parseIntegerId(text);
    if (id !== undefined) return id;
    ctx.addIssue({
      code: 'invalid_format',
      format: 'integer',
      // past 2^53 too: no id is that large, and "a positive integer" alone would puzzle its sender
      message: `Must be a positive integer, at most ${Number.MAX_SAFE_INTEGER}.`,
      input: text,
    });
    return z.NEVER;
  })
  .meta({ type: 'integer', minimum: 1 });
