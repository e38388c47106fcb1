import type { FastifySchemaCompiler } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ApiError } from '../../../libs/errors/index.js';
import {
  CreateUsageEvent,
  CreateUsageEventBatch,
  idempotencyKey,
  single,
  UsageEvent,
  UsageEventBatchResult,
} from '../../../libs/schemas/index.js';
import { batchResultBody } from '../../../libs/usage/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';

/**
 * The usage routes, answered by the same ingest core as the ingest service (DESIGN §2), so the
 * single base URL serves the whole API in every mode. The schemas document the routes; the core
 * validates, so both front ends give the same answer to the same request (a batch reports each
 * event's errors in its own result instead of failing whole).
 */
const validatedByTheCore: FastifySchemaCompiler<unknown> = () => (value) => ({ value });

const headers = z.object({
  'idempotency-key': idempotencyKey
    .optional()
    .meta({ description: 'Required in practice (or idempotency_key in the body); wins over the body key.' }),
});

export const usageRoutes: FastifyPluginAsyncZod = async (app) => {
  const usage = () => {
    if (!app.deps.usageIngest) throw ApiError.serviceUnavailable('Usage ingest is not configured here.');
    return app.deps.usageIngest;
  };

  app.post(
    '/usage/events',
    {
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
      const key = request.headers['idempotency-key'];
      const recorded = await usage().recordEvent(
        request.auth!,
        { body: request.body, idempotencyKey: Array.isArray(key) ? key[0] : key },
        'already',
      );
      return reply.code(201).headers(recorded.headers).send({ data: recorded.value.event });
    },
  );

  app.post(
    '/usage/events/batch',
    {
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
          ...errorResponses(413, 415, 422, 503, ...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const recorded = await usage().recordBatch(request.auth!, request.body, 'already');
      return reply.code(200).headers(recorded.headers).send(batchResultBody(recorded.value, request.id));
    },
  );
};
