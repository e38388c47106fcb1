import type { FastifyReply, FastifyRequest, FastifySchemaCompiler, onRequestHookHandler } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ApiError } from '../../../libs/errors/index.js';
import {
  CreateUsageEvent,
  CreateUsageEventBatch,
  idempotencyKey,
  JSON_CONTENT_TYPE,
  single,
  UsageEvent,
  UsageEventBatchResult,
} from '../../../libs/schemas/index.js';
import { batchResponseBody, parseUsageBody, type UsageIngest } from '../../../libs/usage/index.js';
import { sendError, toApiError } from '../plugins/errors.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';

/**
 * The usage routes, answered by the same ingest core as the ingest service (docs/architecture.md, "Two modes"), so the
 * single base URL serves the whole API in every mode and both front ends give the same answer to
 * the same request.
 *
 * Two things differ from the other routes, both so the core's rules hold here too:
 * - The core validates (the schemas below document the routes only): a batch reports each event's
 *   errors in that event's result instead of failing whole.
 * - The core counts the request against the hourly bucket, in the one Redis round trip that also
 *   reserves its events, so these routes authenticate here without the shared hook's count
 *   (`auth: 'none'` for that hook). A request Fastify refuses before the handler (malformed JSON,
 *   wrong media type, too large) is counted by `countRefused`, the routes' error handler.
 */
const validatedByTheCore: FastifySchemaCompiler<unknown> = () => (value) => ({ value });

/** The first value of a header sent once or more (rawHeaders: name, value, name, value...). */
function firstHeaderValue(rawHeaders: string[], name: string): string | undefined {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.length === name.length && rawHeaders[i]!.toLowerCase() === name)
      return rawHeaders[i + 1];
  }
  return undefined;
}

/** Requests that reached the core, which counted them. */
const counted = new WeakSet<FastifyRequest>();

const authenticate: onRequestHookHandler = async (request) => {
  request.auth = await request.server.deps.platform.authenticator.authenticate(request.headers.authorization);
};

/**
 * The error handler of the usage routes: a request Fastify refused before the core saw it
 * (malformed JSON, wrong media type, too large) still counts. Its answer is the refusal with the
 * rate-limit headers, or 429 when the organization is over its limit, as the ingest service and
 * every other route answer.
 */
const countRefused = async (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
  if (!request.auth || counted.has(request)) return sendError(error, request, reply);
  counted.add(request);
  const refused = toApiError(error);
  try {
    await request.server.deps.usageIngest.refuse(
      request.auth,
      refused ?? new ApiError('INTERNAL_SERVER_ERROR', 'unexpected'),
    );
  } catch (answer) {
    // refuse always throws: the refusal with the headers, 429, or 503 when the count failed
    return sendError(refused ? answer : error, request, reply);
  }
  return sendError(error, request, reply);
};

const headers = z.object({
  'idempotency-key': idempotencyKey
    .optional()
    .meta({ description: 'Required in practice (or idempotency_key in the body); wins over the body key.' }),
});

export const usageRoutes: FastifyPluginAsyncZod = async (app) => {
  // Scoped to this plugin: usage bodies are parsed as the ingest service parses them (BOM,
  // prototype keys, quantities checked against their text), so both front ends answer alike.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser<Buffer>('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, parseUsageBody(body, { contentEncoding: request.headers['content-encoding'] }));
    } catch (error) {
      done(error as Error);
    }
  });

  const core = (request: FastifyRequest): UsageIngest => {
    counted.add(request);
    return app.deps.usageIngest;
  };

  app.post(
    '/usage/events',
    {
      config: { auth: 'none' },
      onRequest: authenticate,
      errorHandler: countRefused,
      validatorCompiler: validatedByTheCore,
      schema: {
        operationId: 'createUsageEvent',
        tags: ['Usage'],
        summary: 'Report metered usage',
        description:
          'Records one usage event for a metered subscription item. Idempotent per (subscription item, key): ' +
          'a repeated key answers 201 with the stored event, whatever the new body says. ' +
          '503 (with Retry-After) when the event could not be made durable; retry with the same key.',
        headers,
        body: CreateUsageEvent,
        response: {
          201: single(UsageEvent),
          ...errorResponses(400, 404, 413, 415, 422, 503, ...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request, reply) => {
      // A repeated header counts by its first value, as uWS reads it on the ingest service (Node
      // would join them with ", " into a key neither client meant).
      const recorded = await core(request).recordEvent(request.auth!, {
        body: request.body,
        idempotencyKey: firstHeaderValue(request.raw.rawHeaders, 'idempotency-key'),
      });
      return reply.code(201).headers(recorded.headers).send({ data: recorded.value.event });
    },
  );

  app.post(
    '/usage/events/batch',
    {
      config: { auth: 'none' },
      onRequest: authenticate,
      errorHandler: countRefused,
      validatorCompiler: validatedByTheCore,
      schema: {
        operationId: 'createUsageEventBatch',
        tags: ['Usage'],
        summary: 'Report up to 1000 usage events in one request',
        description:
          'Beyond the base contract, for high-volume senders: the batch counts as ONE request against the ' +
          'hourly limit. Each event carries its own idempotency_key and gets its own result, in request order: ' +
          'status 201 with the stored event, or the status and error body that event alone would have got. ' +
          '503 when the batch could not be made durable; retry it whole (recorded events come back as stored).',
        body: CreateUsageEventBatch,
        response: {
          200: UsageEventBatchResult,
          ...errorResponses(400, 413, 415, 422, 503, ...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const recorded = await core(request).recordBatch(request.auth!, request.body);
      // Written by the route's own schema, item by item (dataListWriter); Fastify sends a Buffer as
      // it is (the reply's type, bound to the schema's object shape, is set aside for this one send).
      return (reply as FastifyReply)
        .code(200)
        .headers(recorded.headers)
        .type(JSON_CONTENT_TYPE)
        .send(batchResponseBody(recorded.value, request.id));
    },
  );
};
