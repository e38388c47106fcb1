import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ApiError } from '../../../libs/errors/index.js';
import {
  JsonRpcMessage,
  JsonRpcResponseBody,
  MAX_BATCH_MESSAGES,
  MCP_TOOLS,
  McpServer,
} from '../../../libs/mcp/index.js';
import { errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

/**
 * POST /mcp: the read-only MCP endpoint. Authentication and the hourly limit are the shared
 * plugins' (every MCP call counts); GET and DELETE get the shared 405.
 */
export const mcpRoutes: FastifyPluginAsyncZod = async (app) => {
  const server = new McpServer({
    db: app.deps.platform.db,
    log: app.deps.platform.log,
    usage: app.deps.usageRead,
  });

  // Scoped to this plugin: the body reaches the MCP server as text, so a body that is not JSON
  // becomes JSON-RPC's -32700 instead of the REST API's 400. Other media types stay a 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const encoded = ApiError.ofContentEncoding(request.headers['content-encoding']);
    if (encoded) done(encoded);
    else done(null, body);
  });

  app.post(
    '/mcp',
    {
      schema: {
        operationId: 'postMcp',
        tags: ['MCP'],
        summary: 'Read-only MCP endpoint for AI assistants (JSON-RPC 2.0)',
        description:
          'Stateless Model Context Protocol over HTTP with JSON responses (an `Accept: application/json` client is served). ' +
          'Methods: initialize, notifications/initialized (202, no body), tools/list, tools/call, ping. ' +
          `Tools: ${MCP_TOOLS.map((tool) => tool.name).join(', ')}. ` +
          'Errors: -32700 parse error and -32600 invalid request (HTTP 400), -32601 unknown method, ' +
          '-32602 unknown tool (HTTP 200); invalid arguments or a failing tool answer a result with isError: true. ' +
          `A batch (array) of at most ${MAX_BATCH_MESSAGES} messages is answered with an array.`,
        body: z.union([JsonRpcMessage, z.array(JsonRpcMessage).min(1).max(MAX_BATCH_MESSAGES)]),
        response: {
          200: z.union([JsonRpcResponseBody, z.array(JsonRpcResponseBody)]),
          202: z.null().meta({ description: 'Notifications only: accepted, no body.' }),
          400: JsonRpcResponseBody.meta({ description: 'Parse error (-32700) or invalid request (-32600).' }),
          ...errorResponses(401, 413, 415, 429, 500, 503),
        },
      },
      // The schema above documents the body; libs/mcp validates it, so that a bad message is a
      // JSON-RPC error and never the REST API's 422.
      validatorCompiler: () => (data) => ({ value: data }),
    },
    async (request, reply) => {
      const version = request.headers['mcp-protocol-version'];
      const answer = await server.handleHttpBody(typeof request.body === 'string' ? request.body : '', {
        orgId: orgIdOf(request),
        protocolVersionHeader: Array.isArray(version) ? version[0] : version,
      });
      // A notification is accepted with no body at all (not even `null`).
      if (answer.status === 202) return reply.code(202).send(undefined as never);
      return reply.code(answer.status).send(answer.body);
    },
  );
};
