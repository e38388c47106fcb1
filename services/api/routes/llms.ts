import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { describeTool, MCP_TOOLS, renderLlmsTxt } from '../../../libs/mcp/index.js';
import { errorResponses, publicOpenApiDocument } from '../plugins/openapi.js';
import { baseUrlOf } from '../public-url.js';
import type { ApiInstance } from '../types.js';

/**
 * llms.txt, rendered on each request from the same document /openapi.json serves (and the MCP
 * tool list), so it cannot drift from the routes. Public: an agent reads it before it has a key.
 * An answer to a key carries that organization's rate-limit headers, so only private caches keep it.
 */
function llmsTxtHandler(app: ApiInstance) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const document = publicOpenApiDocument(app, baseUrlOf(request));
    return reply
      .type('text/markdown; charset=utf-8')
      .header('cache-control', `${request.auth ? 'private' : 'public'}, max-age=300`)
      .header('vary', 'Authorization')
      .send(renderLlmsTxt(document, MCP_TOOLS.map(describeTool)));
  };
}

/** GET /llms.txt under the base path (in the OpenAPI document). */
export const llmsRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/llms.txt',
    {
      // like /meta: no key needed, but a key given is checked and counted, with the rate-limit headers
      config: { auth: 'optional' },
      schema: {
        operationId: 'getLlmsTxt',
        tags: ['Metadata'],
        summary: 'Overview of the API for LLM agents (markdown, llms.txt)',
        description:
          'Needs no key; a key given is checked and counted like any request. Also served at the site root, /llms.txt.',
        security: [],
        response: {
          200: {
            description: 'Markdown per the llms.txt convention.',
            content: { 'text/markdown': { schema: z.string() } },
          },
          ...errorResponses(401, 429),
        },
      },
    },
    llmsTxtHandler(app),
  );
};

/** GET /llms.txt at the site root, where agents look first (outside the OpenAPI document). */
export const siteRootLlmsRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get('/llms.txt', { config: { auth: 'none' }, schema: { hide: true } }, llmsTxtHandler(app));
};
