import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getEntitlement, listEntitlements } from '../../../libs/entitlements/index.js';
import { ApiError } from '../../../libs/errors/index.js';
import { Entitlement, integerPathId, single } from '../../../libs/schemas/index.js';
import { countInHandler } from '../plugins/authentication.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

/**
 * Entitlements (docs/decisions.md, "Where the entitlement counter lives and why"): may a customer
 * use a product now. Thin: libs/entitlements does the work, on the counters ingest keeps.
 */

const tags = ['Entitlements'];
const CustomerPath = z.object({ customer_id: integerPathId });
const ProductPath = CustomerPath.extend({ product_id: integerPathId });
const ACCESS =
  '`has_access`: the subscription is active or trialing and `used` is below `usage_limit` (or there is no limit); ' +
  '`used` counts every usage event answered 201 before this read, in its running period.';

export const entitlementRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;
  const counterOf = () => {
    const counter = app.deps.usageRead.counter;
    if (!counter) throw ApiError.serviceUnavailable('Usage counts are not available here.', 1);
    return counter;
  };

  app.get(
    '/customers/:customer_id/entitlements',
    {
      config: { countedBy: 'handler' },
      schema: {
        operationId: 'listEntitlements',
        tags,
        summary: "A customer's entitlements: one per item of its subscriptions",
        description: `${ACCESS} A canceled subscription's items stay listed, without access.`,
        params: CustomerPath,
        response: {
          200: z.object({ data: z.array(Entitlement) }).meta({ id: 'EntitlementList' }),
          ...errorResponses(...AUTHENTICATED_ERRORS, 404, 503),
        },
      },
    },
    async (request, reply) => ({
      data: await listEntitlements(db, counterOf(), orgIdOf(request), request.params.customer_id, {
        count: countInHandler(request, reply),
      }),
    }),
  );

  app.get(
    '/customers/:customer_id/entitlements/:product_id',
    {
      // counted in the counter read's store call: one round trip for the whole check
      config: { countedBy: 'handler' },
      schema: {
        operationId: 'getEntitlement',
        tags,
        summary: 'Whether a customer may use a product now (the check before serving a request)',
        description: `${ACCESS} 404 when the customer has no item of the product.`,
        params: ProductPath,
        response: { 200: single(Entitlement), ...errorResponses(...AUTHENTICATED_ERRORS, 404, 503) },
      },
    },
    async (request, reply) => ({
      data: await getEntitlement(
        db,
        counterOf(),
        orgIdOf(request),
        request.params.customer_id,
        request.params.product_id,
        { count: countInHandler(request, reply) },
      ),
    }),
  );
};
