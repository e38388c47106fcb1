import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  listOf,
  paginationOf,
  paginationQuery,
  single,
  storableText,
  uuidInput,
  uuidPathId,
  WEBHOOK_EVENT_STATUSES,
  WebhookEvent,
  WebhookEventWithHistory,
} from '../../../libs/schemas/index.js';
import { getWebhookEvent, listWebhookEvents, retryWebhookEvent } from '../../../libs/webhooks/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

const tags = ['Webhook events'];
const EventParams = z.object({ event_id: uuidPathId });
const ListQuery = paginationQuery.extend({
  endpoint_id: uuidInput.optional().meta({ description: 'Only deliveries to this endpoint.' }),
  status: z.enum(WEBHOOK_EVENT_STATUSES).optional().meta({ description: 'Only deliveries in this status.' }),
  event_type: storableText.min(1).max(100).optional().meta({ description: 'Only events of this type.' }),
});

export const webhookEventRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;

  app.get(
    '/webhook-events',
    {
      schema: {
        operationId: 'listWebhookEvents',
        tags,
        summary: 'List webhook deliveries',
        description:
          'One webhook event per domain event and endpoint, newest first; deleted endpoints included.',
        querystring: ListQuery,
        response: { 200: listOf(WebhookEvent), ...errorResponses(422, ...AUTHENTICATED_ERRORS) },
      },
    },
    async (request) => {
      const { endpoint_id, status, event_type, ...page } = request.query;
      const { data, total } = await listWebhookEvents(
        db,
        orgIdOf(request),
        { endpoint_id, status, event_type },
        page,
      );
      return { data, pagination: paginationOf(page, total) };
    },
  );

  app.get(
    '/webhook-events/:event_id',
    {
      schema: {
        operationId: 'getWebhookEvent',
        tags,
        summary: 'Retrieve a webhook delivery with its attempts',
        params: EventParams,
        response: {
          200: single(WebhookEventWithHistory),
          ...errorResponses(404, ...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request) => ({ data: await getWebhookEvent(db, orgIdOf(request), request.params.event_id) }),
  );

  app.post(
    '/webhook-events/:event_id/retry',
    {
      schema: {
        operationId: 'retryWebhookEvent',
        tags,
        summary: 'Retry a failed or retrying delivery now',
        description:
          'Answers 202 with the event, now RETRYING and due at once; the dispatcher makes one attempt right away, ' +
          'after any event of the endpoint that happened earlier and is being sent again (recover, retry). ' +
          'A SUCCESS or PENDING event answers 409.',
        params: EventParams,
        response: { 202: single(WebhookEvent), ...errorResponses(404, 409, ...AUTHENTICATED_ERRORS) },
      },
    },
    async (request, reply) => {
      const event = await retryWebhookEvent(db, orgIdOf(request), request.params.event_id);
      return reply.code(202).send({ data: event });
    },
  );
};
