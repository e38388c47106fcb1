import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createPortalSession, revokePortalSession } from '../../../libs/portal/index.js';
import { CreatePortalSession, PortalSession, single, uuidPathId } from '../../../libs/schemas/index.js';
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

  app.delete(
    '/portal-sessions/:session_id',
    {
      schema: {
        operationId: 'revokePortalSession',
        tags: ['Customer portal'],
        summary: 'Revoke a portal session: its link opens nothing from then on',
        description:
          'Answers 204. The link then answers 410 with a page that says it was revoked and shows no data. A ' +
          'session revoked already, or unknown, is a 404.',
        params: z.object({ session_id: uuidPathId }),
        response: {
          204: z.undefined().meta({ description: 'Revoked.' }),
          ...errorResponses(...AUTHENTICATED_ERRORS, 404),
        },
      },
    },
    async (request, reply) => {
      await revokePortalSession(db, orgIdOf(request), request.params.session_id);
      return reply.code(204).send();
    },
  );
};
