import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import {
  ApiError,
  type FieldError,
  fieldErrorsFromZod,
  ZOD_PARSE_OPTIONS,
} from '../../../libs/errors/index.js';

/**
 * Validates body, query and params with their zod schema and fails with the spec's 422 body
 * (one `details` entry per failing field). Query and path fields are named by themselves.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  // Fastify hands a missing body to the validator as null: a route whose body is optional takes
  // that (and an explicit JSON null) as no body.
  const optionalBody = httpPart === 'body' && schema.safeParse(undefined).success;
  return (data) => {
    const result = schema.safeParse(optionalBody && data === null ? undefined : data, ZOD_PARSE_OPTIONS);
    if (result.success) return { value: result.data };
    const details = fieldErrorsFromZod(result.error.issues);
    return {
      error: ApiError.validation(httpPart === 'querystring' ? details.map(repeatedIn(data)) : details),
    };
  };
};

/**
 * `?limit=2&limit=3` reaches the schema as an array; "Must be a string." would not tell the caller
 * that the parameter was simply given twice.
 */
function repeatedIn(query: unknown) {
  return (error: FieldError): FieldError =>
    typeof query === 'object' &&
    query !== null &&
    Array.isArray((query as Record<string, unknown>)[error.field])
      ? { field: error.field, message: 'Give this parameter only once.', code: 'repeated' }
      : error;
}
