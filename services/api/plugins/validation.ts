import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { ApiError, fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from '../../../libs/errors/index.js';

/**
 * Validates body, query and params with their zod schema and fails with the spec's 422 body
 * (one `details` entry per failing field). Query and path fields are named by themselves.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema }) =>
  (data) => {
    const result = schema.safeParse(data, ZOD_PARSE_OPTIONS);
    if (result.success) return { value: result.data };
    return { error: ApiError.validation(fieldErrorsFromZod(result.error.issues)) };
  };
