import swagger from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { API_VERSION, BASE_PATH, ErrorBody } from '../../../libs/schemas/index.js';
import type { ApiInstance } from '../types.js';

/**
 * The OpenAPI document is generated from the routes' own zod schemas (one schema per object,
 * never a hand-written copy). Registered before the routes so it sees all of them.
 */
export async function registerOpenApi(app: ApiInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Billing Public API',
        version: API_VERSION,
        description:
          'Customers, catalog, subscriptions, invoices, metered usage and webhooks of one organization. ' +
          'Every request carries `Authorization: Bearer <API_KEY>` (except GET /meta); limits are per organization per UTC hour.',
      },
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key: sk_live_... or sk_test_...',
          },
        },
      },
      security: [{ bearerAuth: [] }],
    },
    transform: keepResponseHeaders,
    transformObject: jsonSchemaTransformObject,
  });
}

type Transform = typeof jsonSchemaTransform;

/**
 * jsonSchemaTransform, keeping the `headers` of a response declared by content type (it keeps
 * only description and content), which @fastify/swagger documents as the response's headers.
 */
const keepResponseHeaders: Transform = (input) => {
  const output = jsonSchemaTransform(input);
  const declared = (input.schema as { response?: Record<string, { headers?: unknown }> }).response;
  const transformed = (output.schema as { response?: Record<string, Record<string, unknown>> }).response;
  for (const [status, response] of Object.entries(declared ?? {})) {
    const target = transformed?.[status];
    if (response?.headers && target && !('headers' in target)) target.headers = response.headers;
  }
  return output;
};

interface OpenApiDocument {
  servers?: { url: string }[];
  paths?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The public document: paths relative to the base path, which `servers` names. */
export function publicOpenApiDocument(app: ApiInstance, baseUrl: string): OpenApiDocument {
  const document = structuredClone(app.swagger() as OpenApiDocument);
  const paths: Record<string, unknown> = {};
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    if (path.startsWith(`${BASE_PATH}/`)) paths[path.slice(BASE_PATH.length)] = item;
  }
  const components = document.components as { schemas?: Record<string, unknown> } | undefined;
  return {
    ...document,
    servers: [{ url: `${baseUrl}${BASE_PATH}` }],
    paths,
    components: { ...components, schemas: reachableSchemas(paths, components?.schemas ?? {}) },
  };
}

/**
 * Every zod schema with an id is emitted twice (input and output variants); only those a public
 * operation references, directly or through another schema, belong in the document.
 */
function reachableSchemas(paths: unknown, schemas: Record<string, unknown>): Record<string, unknown> {
  const reachable: Record<string, unknown> = {};
  const pending = [paths];
  while (pending.length) {
    const text = JSON.stringify(pending.pop());
    for (const [, name] of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      if (name && !(name in reachable) && name in schemas) {
        reachable[name] = schemas[name];
        pending.push(schemas[name]);
      }
    }
  }
  return reachable;
}

/** Error responses an operation documents, each with the shared Error schema. */
export function errorResponses<const S extends number>(...statuses: S[]): Record<S, typeof ErrorBody> {
  return Object.fromEntries(statuses.map((status) => [status, ErrorBody])) as Record<S, typeof ErrorBody>;
}

/** The errors any authenticated operation can answer. */
export const AUTHENTICATED_ERRORS = [401, 429, 500] as const;
