import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PLAN_LIMITS } from '../../../libs/rate-limit/index.js';
import { API_VERSION, BASE_PATH, Meta, single } from '../../../libs/schemas/index.js';
import { AUTHENTICATED_ERRORS, errorResponses, publicOpenApiDocument } from '../plugins/openapi.js';
import { baseUrlOf } from '../public-url.js';

export const metaRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/meta',
    {
      config: { auth: 'optional' },
      schema: {
        operationId: 'getMeta',
        tags: ['Metadata'],
        summary: 'API metadata and rate limits',
        description:
          "Needs no key. With a valid key, `organization` reports the caller's plan, limit and what is left in the current hour.",
        security: [],
        response: { 200: single(Meta), ...errorResponses(401, 429) },
      },
    },
    async (request) => {
      const base = baseUrlOf(request);
      const decision = request.rateLimit;
      return {
        data: {
          name: 'Billing Public API',
          version: API_VERSION,
          base_path: BASE_PATH,
          authentication: 'bearer' as const,
          openapi_url: `${base}${BASE_PATH}/openapi.json`,
          mcp_url: `${base}${BASE_PATH}/mcp`,
          llms_url: `${base}${BASE_PATH}/llms.txt`,
          rate_limits: {
            window: 'hour' as const,
            window_alignment: 'utc_hour' as const,
            default_plan: 'beta' as const,
            plans: PLAN_LIMITS,
          },
          ...(decision && {
            organization: {
              plan: decision.plan,
              limit: decision.limit,
              remaining: decision.remaining,
              resets_at: new Date(decision.resetEpochSeconds * 1000).toISOString(),
            },
          }),
        },
      };
    },
  );

  app.get(
    '/openapi.json',
    {
      schema: {
        operationId: 'getOpenApi',
        tags: ['Metadata'],
        summary: 'This OpenAPI document',
        response: {
          200: z.record(z.string(), z.unknown()).meta({ description: 'An OpenAPI 3.1 document.' }),
          ...errorResponses(...AUTHENTICATED_ERRORS),
        },
      },
    },
    async (request) => publicOpenApiDocument(app, baseUrlOf(request)),
  );
};
