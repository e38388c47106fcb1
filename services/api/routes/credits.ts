import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  createCreditGrant,
  getCreditBalance,
  getCreditGrant,
  getCreditTopUp,
  listCreditGrants,
  setCreditTopUp,
  voidCreditGrant,
} from '../../../libs/billing/index.js';
import { ApiError } from '../../../libs/errors/index.js';
import { afterCreditsMoved } from '../../../libs/guardrails/index.js';
import {
  CREDIT_GRANT_STATUSES,
  CreateCreditGrant,
  CreditBalance,
  CreditGrant,
  CreditGrantWithLedger,
  CreditTopUp,
  CreditTopUpRequest,
  integerPathId,
  listOf,
  paginationOf,
  paginationQuery,
  parseIntegerId,
  single,
  uuidPathId,
} from '../../../libs/schemas/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

/**
 * Prepaid credits (docs/decisions.md, "Credits"): grants, their ledger, the live balance and the
 * automatic top-up. Thin: libs/billing does the work.
 */

const tags = ['Credits'];
const CustomerPath = z.object({ customer_id: integerPathId });
const GrantPath = z.object({ credit_grant_id: uuidPathId });
const GrantListQuery = paginationQuery.extend({
  status: z.enum(CREDIT_GRANT_STATUSES).optional().meta({ description: 'Only grants in this status.' }),
});

/** A path's customer id; one that is not a positive integer names no customer: 404. */
function customerIdOf(params: { customer_id: string }): number {
  const id = parseIntegerId(params.customer_id);
  if (id === undefined) throw ApiError.notFound(`Customer ${params.customer_id}`);
  return id;
}

export const creditRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;
  const stores = app.deps.usageRead;

  app.post(
    '/customers/:customer_id/credit-grants',
    {
      schema: {
        operationId: 'createCreditGrant',
        tags,
        summary: 'Grant credits to a customer',
        description:
          '`promotional` credits are ACTIVE at once. `paid` credits are sold on a POSTED "Prepaid credits" invoice ' +
          '(tax EXEMPT; tax is charged on the invoices the credits pay) and stay PENDING until it is paid. Posted ' +
          "invoices are paid from the customer's ACTIVE grants in order: priority, soonest expiry, oldest. A repeated " +
          '`reference` with the same amount answers the same grant with 200.',
        params: CustomerPath,
        body: CreateCreditGrant,
        response: {
          200: single(CreditGrant),
          201: single(CreditGrant),
          ...errorResponses(...AUTHENTICATED_ERRORS, 400, 404, 409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const { grant, created } = await db.transaction((tx) =>
        createCreditGrant(tx, {
          orgId: orgIdOf(request),
          customerId: customerIdOf(request.params),
          input: request.body,
        }),
      );
      if (created)
        await afterCreditsMoved(db, stores, [{ orgId: orgIdOf(request), customerId: grant.customer_id }]);
      return reply.code(created ? 201 : 200).send({ data: grant });
    },
  );

  app.get(
    '/customers/:customer_id/credit-grants',
    {
      schema: {
        operationId: 'listCreditGrants',
        tags,
        summary: "A customer's credit grants, newest first",
        params: CustomerPath,
        querystring: GrantListQuery,
        response: { 200: listOf(CreditGrant), ...errorResponses(...AUTHENTICATED_ERRORS, 404, 422) },
      },
    },
    async (request) => {
      const { data, total } = await listCreditGrants(
        db,
        orgIdOf(request),
        customerIdOf(request.params),
        request.query,
      );
      return { data, pagination: paginationOf(request.query, total) };
    },
  );

  app.get(
    '/credit-grants/:credit_grant_id',
    {
      schema: {
        operationId: 'getCreditGrant',
        tags,
        summary: 'Retrieve a credit grant with its ledger',
        description:
          'The ledger lists every movement (grant, use, expiry, void) with the remaining after it.',
        params: GrantPath,
        response: { 200: single(CreditGrantWithLedger), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({ data: await getCreditGrant(db, orgIdOf(request), request.params.credit_grant_id) }),
  );

  app.post(
    '/credit-grants/:credit_grant_id/void',
    {
      schema: {
        operationId: 'voidCreditGrant',
        tags,
        summary: 'Void a credit grant',
        description:
          'What is left lapses; what was used stays used. A PENDING grant voids its whole amount and its ' +
          'Prepaid credits invoice is withdrawn. A grant already DEPLETED, EXPIRED or VOIDED is answered unchanged.',
        params: GrantPath,
        response: { 200: single(CreditGrant), ...errorResponses(...AUTHENTICATED_ERRORS, 404, 409) },
      },
    },
    async (request) => {
      const orgId = orgIdOf(request);
      const grant = await db.transaction((tx) =>
        voidCreditGrant(tx, { grantId: request.params.credit_grant_id, orgId }),
      );
      // what the customer can spend moved: its automatic top-up, then its alerts
      await afterCreditsMoved(db, stores, [{ orgId, customerId: grant.customer_id }]);
      return { data: grant };
    },
  );

  app.get(
    '/customers/:customer_id/credit-balance',
    {
      schema: {
        operationId: 'getCreditBalance',
        tags,
        summary: "A customer's credit balance against its running usage",
        description:
          "`available`: what its grants can pay now; `pending`: its subscriptions' upcoming invoices' totals; " +
          '`projected` = available - pending.',
        params: CustomerPath,
        response: { 200: single(CreditBalance), ...errorResponses(...AUTHENTICATED_ERRORS, 404, 503) },
      },
    },
    async (request) => ({
      data: await getCreditBalance(db, stores, orgIdOf(request), customerIdOf(request.params)),
    }),
  );

  app.get(
    '/customers/:customer_id/credit-top-up',
    {
      schema: {
        operationId: 'getCreditTopUp',
        tags,
        summary: "A customer's automatic top-up",
        params: CustomerPath,
        response: { 200: single(CreditTopUp), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({
      data: await getCreditTopUp(db, orgIdOf(request), customerIdOf(request.params)),
    }),
  );

  app.put(
    '/customers/:customer_id/credit-top-up',
    {
      schema: {
        operationId: 'setCreditTopUp',
        tags,
        summary: "Set a customer's automatic top-up",
        description:
          'While enabled, when `projected` falls below `threshold`, one paid grant of `target - projected` is made ' +
          '(never a second while one is PENDING). Checked whenever `projected` may move: as usage is counted, ' +
          'after each posting, a void or an expiry, and now.',
        params: CustomerPath,
        body: CreditTopUpRequest,
        response: {
          200: single(CreditTopUp),
          ...errorResponses(...AUTHENTICATED_ERRORS, 400, 404, 413, 415, 422),
        },
      },
    },
    async (request) => {
      const orgId = orgIdOf(request);
      const customerId = customerIdOf(request.params);
      const topUp = await setCreditTopUp(db, orgId, customerId, request.body);
      await afterCreditsMoved(db, stores, [{ orgId, customerId }]);
      return { data: topUp };
    },
  );
};
