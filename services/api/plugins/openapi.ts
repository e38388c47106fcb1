import swagger from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  API_VERSION,
  BASE_PATH,
  ErrorBody,
  WEBHOOK_PAYLOADS,
  WebhookDeliveryHeaders,
} from '../../../libs/schemas/index.js';
import type { ApiInstance } from '../types.js';
import { componentHeaders, headersOf, methodNotAllowedResponse } from './openapi-headers.js';

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
          'Every request carries `Authorization: Bearer <API_KEY>` (except GET /meta); limits are per organization per UTC hour. ' +
          'Every response carries X-Request-ID, and every response to a counted request the rate-limit headers; ' +
          'a method a path does not take answers 405 with Allow (`components.responses.MethodNotAllowed`).',
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

/** Marks an operation whose body may be omitted; publicOpenApiDocument turns it into `required: false`. */
const OPTIONAL_BODY = 'x-optional-body';

/**
 * jsonSchemaTransform, keeping the `headers` of a response declared by content type (it keeps
 * only description and content), which @fastify/swagger documents as the response's headers, and
 * marking a body schema that accepts no body (@fastify/swagger documents every body as required).
 */
const keepResponseHeaders: Transform = (input) => {
  const output = jsonSchemaTransform(input);
  const declared = (input.schema as { response?: Record<string, { headers?: unknown }> }).response;
  const transformed = (output.schema as { response?: Record<string, Record<string, unknown>> }).response;
  for (const [status, response] of Object.entries(declared ?? {})) {
    const target = transformed?.[status];
    if (response?.headers && target && !('headers' in target)) target.headers = response.headers;
  }
  const body = (input.schema as { body?: unknown }).body;
  if (body instanceof z.ZodType && body.safeParse(undefined).success) {
    (output.schema as Record<string, unknown>)[OPTIONAL_BODY] = true;
  }
  return output;
};

interface OpenApiDocument {
  servers?: { url: string }[];
  paths?: Record<string, unknown>;
  webhooks?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The public document: paths relative to the base path, which `servers` names, and the webhooks sent. */
export function publicOpenApiDocument(app: ApiInstance, baseUrl: string): OpenApiDocument {
  const document = structuredClone(app.swagger() as OpenApiDocument);
  const paths: Record<string, unknown> = {};
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    if (path.startsWith(`${BASE_PATH}/`)) paths[path.slice(BASE_PATH.length)] = item;
    for (const operation of Object.values(item as Record<string, Record<string, unknown>>)) {
      declareResponseHeaders(operation);
      if (!operation[OPTIONAL_BODY]) continue;
      delete operation[OPTIONAL_BODY];
      (operation.requestBody as { required: boolean }).required = false;
    }
  }
  const webhooks = webhooksSection();
  const components = document.components as { schemas?: Record<string, unknown> } | undefined;
  const responses = { MethodNotAllowed: methodNotAllowedResponse({ $ref: '#/components/schemas/Error' }) };
  return {
    ...document,
    servers: [{ url: `${baseUrl}${BASE_PATH}` }],
    paths,
    webhooks,
    components: {
      ...components,
      schemas: reachableSchemas([paths, webhooks, responses], components?.schemas ?? {}),
      headers: componentHeaders(),
      responses,
    },
  };
}

/**
 * Every response of `operation` with the headers it carries (openapi-headers.ts), beside those a
 * route declared itself (Content-Disposition). An operation without security takes a key
 * optionally: counted, with the rate-limit headers, when one is given.
 */
function declareResponseHeaders(operation: Record<string, unknown>): void {
  const security = operation.security;
  const access = Array.isArray(security) && security.length === 0 ? 'optional' : 'authenticated';
  const responses = (operation.responses ?? {}) as Record<string, { headers?: Record<string, unknown> }>;
  for (const [status, response] of Object.entries(responses)) {
    response.headers = { ...headersOf(status, access), ...response.headers };
  }
}

const DELIVERY_DESCRIPTION =
  'POSTed to every ACTIVE endpoint subscribed to this event type or its family wildcard, at least once: ' +
  'deduplicate on `id` (also webhook-id). Verify the raw body before parsing it, with either header: ' +
  'X-Service-Signature (hex HMAC-SHA256 keyed with the whole `whsec_...` secret), or webhook-id, ' +
  'webhook-timestamp and webhook-signature as the Standard Webhooks libraries (`standardwebhooks` on npm) ' +
  'check them, with the secret exactly as shown; reject a webhook-timestamp more than 5 minutes away. ' +
  'Answer 2xx once processed or durably queued, and ignore event types you do not know.';

/**
 * The OpenAPI 3.1 `webhooks`: one POST per event type the service emits, its body the event's
 * payload schema (a component, by reference) and its parameters the delivery headers, both from
 * the zod schemas that type what the dispatcher sends.
 */
function webhooksSection(): Record<string, unknown> {
  const parameters = Object.entries(WebhookDeliveryHeaders.shape).map(([name, schema]) => {
    const { $schema: _dialect, description, ...jsonSchema } = z.toJSONSchema(schema, { io: 'output' });
    return { name, in: 'header', required: true, description, schema: jsonSchema };
  });
  return Object.fromEntries(
    Object.entries(WEBHOOK_PAYLOADS).map(([type, payload]) => {
      const { id, description } = z.globalRegistry.get(payload) ?? {};
      const operationId = `${type.replace(/\.(\w)/g, (_, letter: string) => letter.toUpperCase())}Webhook`;
      const operation = {
        operationId,
        tags: ['Webhook payloads'],
        summary: `${type}: ${description}`,
        description: DELIVERY_DESCRIPTION,
        security: [],
        parameters,
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${id}` } } },
        },
        responses: {
          '2XX': {
            description:
              'Received. Anything else, or no answer within the timeout (10 s), is retried: 5 attempts, 1, 2, 4 and 8 s apart.',
          },
        },
      };
      return [type, { post: operation }];
    }),
  );
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

/**
 * The errors any authenticated operation can answer: its key refused, the hourly limit spent, a
 * bug, or a dependency down (the key's database, the rate-limit store).
 */
export const AUTHENTICATED_ERRORS = [401, 429, 500, 503] as const;
