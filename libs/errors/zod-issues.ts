import type { z } from 'zod';
import type { FieldError } from './api-error.js';

/**
 * Options to parse with so issues carry their input: that is how a missing field ("required")
 * is told apart from a wrong one. The input never leaves this module.
 */
export const ZOD_PARSE_OPTIONS = { reportInput: true } as const;

/** Every `details[].code` a client can see (docs/decisions.md lists them). */
const FIELD_ERROR_CODES = new Set([
  'required',
  'invalid_type',
  'invalid_format',
  'invalid_value',
  'too_long',
  'too_short',
  'blank',
  'out_of_range',
  'unknown_field',
]);

/**
 * Turns zod issues into `details` entries with stable codes a client can switch on and messages
 * a person can act on. `prefix` names the part of the request the path is relative to (empty for
 * the body and query, whose fields are named by themselves).
 */
export function fieldErrorsFromZod(issues: readonly z.core.$ZodIssue[], prefix = ''): FieldError[] {
  const errors: FieldError[] = [];
  for (const issue of issues) {
    const base = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        errors.push({
          field: base ? `${base}.${key}` : key,
          message: 'Unknown field.',
          code: 'unknown_field',
        });
      }
      continue;
    }
    const { code, message } = describe(issue);
    errors.push({ field: base || '(body)', message, code });
  }
  return errors;
}

function describe(issue: z.core.$ZodIssue): { code: string; message: string } {
  const missing = issue.input === undefined;
  switch (issue.code) {
    case 'invalid_type':
      if (missing) return { code: 'required', message: 'Required.' };
      return { code: 'invalid_type', message: `Must be ${article(issue.expected)}.` };
    case 'too_big': {
      if (issue.origin === 'string')
        return { code: 'too_long', message: `Must be at most ${issue.maximum} characters.` };
      if (issue.origin === 'array')
        return { code: 'too_long', message: `Must have at most ${issue.maximum} items.` };
      return {
        code: 'out_of_range',
        message: `Must be ${issue.inclusive ? 'at most' : 'less than'} ${issue.maximum}.`,
      };
    }
    case 'too_small': {
      if (issue.origin === 'string') {
        if (Number(issue.minimum) === 1)
          return { code: missing ? 'required' : 'blank', message: 'Must not be empty.' };
        return { code: 'too_short', message: `Must be at least ${issue.minimum} characters.` };
      }
      if (issue.origin === 'array')
        return { code: 'too_short', message: `Must have at least ${issue.minimum} items.` };
      return {
        code: 'out_of_range',
        message: `Must be ${issue.inclusive ? 'at least' : 'greater than'} ${issue.minimum}.`,
      };
    }
    case 'invalid_format':
      if (issue.format === 'email')
        return { code: 'invalid_format', message: 'Must be a valid e-mail address.' };
      return { code: 'invalid_format', message: issue.message };
    case 'invalid_value':
      if (issue.values.length <= 20) {
        return { code: 'invalid_value', message: `Must be one of: ${issue.values.map(String).join(', ')}.` };
      }
      return { code: 'invalid_value', message: issue.message };
    case 'invalid_union':
    case 'not_multiple_of':
      return { code: 'invalid_value', message: issue.message };
    case 'custom': {
      // A refinement names its code in `params.code` when invalid_value is not the best one.
      const named = (issue.params as { code?: unknown } | undefined)?.code;
      const code = typeof named === 'string' && FIELD_ERROR_CODES.has(named) ? named : 'invalid_value';
      return { code, message: issue.message };
    }
    default:
      return { code: 'invalid_value', message: issue.message };
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
