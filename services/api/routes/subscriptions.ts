import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { afterCreditsMoved } from '../../../libs/guardrails/index.js';
import {
  integerIdQuery,
  integerPathId,
  listOf,
  paginationOf,
  paginationQuery,
  SUBSCRIPTION_STATUSES,
  Subscription,
  SubscriptionChange,
  SubscriptionChangeRequest,
  single,
} from '../../../libs/schemas/index.js';
import { changeSubscription, getSubscription, listSubscriptions } from '../../../libs/subscriptions/index.js';
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

  app.post(
    '/subscriptions/:subscription_id/changes',
    {
      schema: {
        operationId: 'changeSubscription',
        tags: ['Subscriptions'],
        summary: "Change a subscription's items, now or at the end of its period, with proration",
        description:
          '`items` is the whole new set: an entry with `id` keeps (and may re-quantify) that item, one with ' +
          '`product_id` adds an item, an item left out is removed. `effective: "now"` (default) changes it at ' +
          'once: licensed items get a credit line for the rest of the period at the old quantity and price and a ' +
          'charge line at the new (to the second, rounded to the minor unit), which the next invoice carries; ' +
          'metered items are billed for their usage while they were on the subscription. `proration: "none"` ' +
          'bills the running period at the old terms. `effective: "period_end"` schedules the change ' +
          '(`pending_change`), applied by the billing run at the boundary; a later change replaces it. ' +
          'Trialing subscriptions change without proration. `preview: true` answers the same and writes ' +
          'nothing. Emits `subscription.updated` when the items change. Canceled or expired: 409.',
        params: SubscriptionPath,
        body: SubscriptionChangeRequest,
        response: {
          200: single(SubscriptionChange),
          ...errorResponses(...AUTHENTICATED_ERRORS, 400, 404, 409, 413, 415, 422),
        },
      },
    },
    async (request) => {
      const orgId = orgIdOf(request);
      const change = await changeSubscription(db, {
        subscriptionId: request.params.subscription_id,
        orgId,
        change: request.body,
      });
      if (!request.body.preview) {
        // what the customer owes moved: its top-up and alerts, after the answer (never delaying it)
        const customer = { orgId, customerId: change.subscription.customer_id };
        void afterCreditsMoved(db, app.deps.usageRead, [customer]).catch((error: unknown) =>
          request.log.error({ err: error }, 'alerts after a change failed'),
        );
      }
      return { data: change };
    },
  );
};
