import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { createPortalSession } from '../../../libs/portal/index.js';
import { CreatePortalSession, PortalSession, single } from '../../../libs/schemas/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { pagesBaseUrlOf } from '../public-url.js';
import { orgIdOf } from '../types.js';

export const portalSessionRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;

  app.post(
    '/portal-sessions',
    {
      schema: {
        operationId: 'createPortalSession',
        tags: ['Customer portal'],
        summary: "Create a link to a customer's read-only portal",
        description:
          "`url` opens, without an API key, that one customer's portal: subscriptions, usage, the upcoming " +
          'invoice and every issued invoice with its printable HTML and PDF, in English or Canadian French. ' +
          'Send it to the customer; it works until `expires_at` and is shown only once. Links are made under ' +
          "PUBLIC_URL (default: the API's own URL).",
        body: CreatePortalSession,
        response: {
          201: single(PortalSession),
          ...errorResponses(...AUTHENTICATED_ERRORS, 400, 404, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const session = await createPortalSession(db, orgIdOf(request), request.body, {
        baseUrl: pagesBaseUrlOf(request),
      });
      return reply.code(201).send({ data: session });
    },
  );
};
