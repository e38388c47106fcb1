import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createAlert, deleteAlert, getAlert, listAlerts } from '../../../libs/guardrails/index.js';
import {
  ALERT_STATUSES,
  Alert,
  CreateAlert,
  integerIdQuery,
  listOf,
  paginationOf,
  paginationQuery,
  single,
  uuidPathId,
} from '../../../libs/schemas/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

/**
 * Spend alerts (docs/decisions.md, "Alerts fire once per crossing"). Thin: libs/guardrails keeps
 * them and evaluates them as usage is counted and money moves.
 */

const tags = ['Alerts'];
const AlertPath = z.object({ alert_id: uuidPathId });
const AlertListQuery = paginationQuery.extend({
  subscription_id: integerIdQuery.optional().meta({ description: "Only this subscription's alerts." }),
  customer_id: integerIdQuery.optional().meta({ description: "Only this customer's alerts." }),
  status: z.enum(ALERT_STATUSES).optional().meta({ description: 'Only alerts in this status.' }),
});

export const alertRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;
  const stores = app.deps.usageRead;

  app.post(
    '/alerts',
    {
      schema: {
        operationId: 'createAlert',
        tags,
        summary: 'Create a spend alert',
        description:
          "`usage_quantity` (needs `subscription_item_id`, a metered item) fires when the item's period quantity " +
          "reaches `threshold`; `usage_amount` when the subscription's period usage amount (before tax) does; " +
          "`credit_balance` when the customer's projected credit falls below it. Webhooks `alert.triggered` (once " +
          'per crossing and period) and `alert.resolved` (the value went back). A new period sets usage alerts ' +
          'back to OK silently. Evaluated at once, then as usage is counted (within seconds of the 201).',
        body: CreateAlert,
        response: {
          201: single(Alert),
          ...errorResponses(...AUTHENTICATED_ERRORS, 400, 404, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const alert = await createAlert(db, stores, orgIdOf(request), request.body);
      return reply.code(201).send({ data: alert });
    },
  );

  app.get(
    '/alerts',
    {
      schema: {
        operationId: 'listAlerts',
        tags,
        summary: 'List alerts, newest first',
        querystring: AlertListQuery,
        response: { 200: listOf(Alert), ...errorResponses(...AUTHENTICATED_ERRORS, 422) },
      },
    },
    async (request) => {
      const { data, total } = await listAlerts(db, orgIdOf(request), request.query);
      return { data, pagination: paginationOf(request.query, total) };
    },
  );

  app.get(
    '/alerts/:alert_id',
    {
      schema: {
        operationId: 'getAlert',
        tags,
        summary: 'Retrieve an alert',
        params: AlertPath,
        response: { 200: single(Alert), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({ data: await getAlert(db, orgIdOf(request), request.params.alert_id) }),
  );

  app.delete(
    '/alerts/:alert_id',
    {
      schema: {
        operationId: 'deleteAlert',
        tags,
        summary: 'Delete an alert',
        params: AlertPath,
        response: {
          204: z.undefined().meta({ description: 'Deleted.' }),
          ...errorResponses(...AUTHENTICATED_ERRORS, 404),
        },
      },
    },
    async (request, reply) => {
      await deleteAlert(db, orgIdOf(request), request.params.alert_id);
      return reply.code(204).send();
    },
  );
};
