import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  CreatedWebhookEndpoint,
  CreateWebhookEndpoint,
  listOf,
  paginationOf,
  paginationQuery,
  RecoverWebhookEvents,
  RotateWebhookSecret,
  single,
  UpdateWebhookEndpoint,
  uuidPathId,
  WEBHOOK_ENDPOINT_STATUSES,
  WebhookEndpoint,
  WebhookRecovery,
} from '../../../libs/schemas/index.js';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  recoverWebhookEvents,
  rotateSecret,
  updateEndpoint,
} from '../../../libs/webhooks/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

const tags = ['Webhook endpoints'];
const EndpointParams = z.object({ endpoint_id: uuidPathId });
const ListQuery = paginationQuery.extend({
  status: z
    .enum(WEBHOOK_ENDPOINT_STATUSES)
    .optional()
    .meta({ description: 'Only endpoints in this status.' }),
});

export const webhookEndpointRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;
  const policy = { allowLocalhost: app.deps.webhookAllowLocalhost };

  app.post(
    '/webhook-endpoints',
    {
      schema: {
        operationId: 'createWebhookEndpoint',
        tags,
        summary: 'Register a webhook endpoint',
        description:
          'Answers 201 with the endpoint and its signing `secret`, shown this once. `events` lists event names or family wildcards (`invoice.*`).',
        body: CreateWebhookEndpoint,
        response: {
          201: single(CreatedWebhookEndpoint),
          ...errorResponses(400, 413, 415, 422, ...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const endpoint = await createEndpoint(db, orgIdOf(request), request.body, policy);
      return reply.code(201).send({ data: endpoint });
    },
  );

  app.get(
    '/webhook-endpoints',
    {
      schema: {
        operationId: 'listWebhookEndpoints',
        tags,
        summary: 'List webhook endpoints',
        querystring: ListQuery,
        response: { 200: listOf(WebhookEndpoint), ...errorResponses(422, ...AUTHENTICATED_ERRORS) },
      },
    },
    async (request) => {
      const { status, ...page } = request.query;
      const { data, total } = await listEndpoints(db, orgIdOf(request), { status }, page);
      return { data, pagination: paginationOf(page, total) };
    },
  );

  app.get(
    '/webhook-endpoints/:endpoint_id',
    {
      schema: {
        operationId: 'getWebhookEndpoint',
        tags,
        summary: 'Retrieve a webhook endpoint',
        params: EndpointParams,
        response: { 200: single(WebhookEndpoint), ...errorResponses(404, ...AUTHENTICATED_ERRORS) },
      },
    },
    async (request) => ({ data: await getEndpoint(db, orgIdOf(request), request.params.endpoint_id) }),
  );

  app.patch(
    '/webhook-endpoints/:endpoint_id',
    {
      schema: {
        operationId: 'updateWebhookEndpoint',
        tags,
        summary: 'Update a webhook endpoint',
        description:
          'Changes the fields sent and answers 200 with the endpoint (never its secret). Disabling it ends its pending deliveries.',
        params: EndpointParams,
        body: UpdateWebhookEndpoint,
        response: {
          200: single(WebhookEndpoint),
          ...errorResponses(400, 404, 413, 415, 422, ...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request) => ({
      data: await updateEndpoint(db, orgIdOf(request), request.params.endpoint_id, request.body, policy),
    }),
  );

  app.post(
    '/webhook-endpoints/:endpoint_id/rotate-secret',
    {
      schema: {
        operationId: 'rotateWebhookEndpointSecret',
        tags,
        summary: 'Rotate the signing secret of a webhook endpoint',
        description:
          'Answers 200 with the endpoint and its new `secret`, shown this once. X-Service-Signature uses the new secret at once; for `expire_previous_in` seconds (default 86400, 0 to 604800) webhook-signature also carries a signature made with the previous secret, which is then forgotten. A rotation drops the secret before the previous one. Works on a DISABLED endpoint (rotate, then enable). The body may be omitted.',
        params: EndpointParams,
        body: RotateWebhookSecret.optional(),
        response: {
          200: single(CreatedWebhookEndpoint),
          ...errorResponses(400, 404, 413, 415, 422, ...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request) => ({
      data: await rotateSecret(
        db,
        orgIdOf(request),
        request.params.endpoint_id,
        request.body ?? RotateWebhookSecret.parse({}),
      ),
    }),
  );

  app.post(
    '/webhook-endpoints/:endpoint_id/recover',
    {
      schema: {
        operationId: 'recoverWebhookEndpointEvents',
        tags,
        summary: 'Send the failed events of a webhook endpoint again',
        description:
          'Every FAILED event of the endpoint created at or after `since` gets a new series of attempts (the same id and body; a new webhook-timestamp and signatures per attempt), one event at a time in the order the events happened, each after the one before it is delivered or has used its attempts. Answers 202 with how many were queued; events already queued again by an earlier call are not queued twice. A DISABLED endpoint answers 409: enable it first.',
        params: EndpointParams,
        body: RecoverWebhookEvents,
        response: {
          202: single(WebhookRecovery),
          ...errorResponses(400, 404, 409, 413, 415, 422, ...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const recovery = await recoverWebhookEvents(
        db,
        orgIdOf(request),
        request.params.endpoint_id,
        request.body,
        { seriesLength: app.deps.webhookMaxAttempts },
      );
      return reply.code(202).send({ data: recovery });
    },
  );

  app.delete(
    '/webhook-endpoints/:endpoint_id',
    {
      schema: {
        operationId: 'deleteWebhookEndpoint',
        tags,
        summary: 'Delete a webhook endpoint',
        description:
          'Answers 204. Its pending deliveries stop; its delivery history stays readable under /webhook-events.',
        params: EndpointParams,
        response: {
          204: z.undefined().meta({ description: 'Deleted.' }),
          ...errorResponses(404, ...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request, reply) => {
      await deleteEndpoint(db, orgIdOf(request), request.params.endpoint_id);
      return reply.code(204).send();
    },
  );
};
