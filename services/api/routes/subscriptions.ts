import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  integerIdQuery,
  integerPathId,
  listOf,
  paginationOf,
  paginationQuery,
  SUBSCRIPTION_STATUSES,
  Subscription,
  single,
} from '../../../libs/schemas/index.js';
import { getSubscription, listSubscriptions } from '../../../libs/subscriptions/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

const SubscriptionListQuery = paginationQuery.extend({
  customer_id: integerIdQuery.optional().meta({ description: "Only this customer's subscriptions." }),
  status: z
    .enum(SUBSCRIPTION_STATUSES)
    .optional()
    .meta({ description: 'Only subscriptions in this status (lowercase).' }),
});
const SubscriptionPath = z.object({ subscription_id: integerPathId });

export const subscriptionRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;

  app.get(
    '/subscriptions',
    {
      schema: {
        operationId: 'listSubscriptions',
        tags: ['Subscriptions'],
        summary: 'List subscriptions with their items, newest first',
        querystring: SubscriptionListQuery,
        response: { 200: listOf(Subscription), ...errorResponses(...AUTHENTICATED_ERRORS, 422) },
      },
    },
    async (request) => {
      const { customer_id, status, ...page } = request.query;
      const filter = { customerId: customer_id, status };
      const { data, total } = await listSubscriptions(db, orgIdOf(request), filter, page);
      return { data, pagination: paginationOf(page, total) };
    },
  );

  app.get(
    '/subscriptions/:subscription_id',
    {
      schema: {
        operationId: 'getSubscription',
        tags: ['Subscriptions'],
        summary: 'Retrieve a subscription with its items',
        params: SubscriptionPath,
        response: { 200: single(Subscription), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({
      data: await getSubscription(db, orgIdOf(request), request.params.subscription_id),
    }),
  );
};
