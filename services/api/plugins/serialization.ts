import type { FastifySerializerCompiler } from 'fastify';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { jsonWriter } from '../../../libs/schemas/index.js';

/**
 * Responses are written by fast-json-stringify from the JSON Schema of the route's own zod
 * response schema (jsonWriter): the schema still decides what goes out (unknown fields are
 * dropped, a missing required field fails), without a zod parse and a JSON.stringify of every
 * response, which cost several times the writing on a page of invoices. A schema JSON Schema cannot express
 * falls back to zod.
 */
export const responseSerializerCompiler: FastifySerializerCompiler<z.ZodType> = (route) => {
  try {
    return jsonWriter(route.schema) as (data: unknown) => string;
  } catch {
    return zodSerializerCompiler(route);
  }
};
