import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { llmsRoutes } from './llms.js';
import { mcpRoutes } from './mcp.js';
import { metaRoutes } from './meta.js';
import { webhookEndpointRoutes } from './webhook-endpoints.js';
import { webhookEventRoutes } from './webhook-events.js';

/** Every route under the public base path, one plugin per resource. */
export const publicRoutes: FastifyPluginAsyncZod = async (app) => {
  await app.register(metaRoutes);
  await app.register(webhookEndpointRoutes);
  await app.register(webhookEventRoutes);
  await app.register(mcpRoutes);
  await app.register(llmsRoutes);
};
