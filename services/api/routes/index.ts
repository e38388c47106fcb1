import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { alertRoutes } from './alerts.js';
import { creditNoteRoutes } from './credit-notes.js';
import { creditRoutes } from './credits.js';
import { customerRoutes } from './customers.js';
import { entitlementRoutes } from './entitlements.js';
import { invoiceRoutes } from './invoices.js';
import { llmsRoutes } from './llms.js';
import { mcpRoutes } from './mcp.js';
import { metaRoutes } from './meta.js';
import { portalSessionRoutes } from './portal-sessions.js';
import { productRoutes } from './products.js';
import { subscriptionRoutes } from './subscriptions.js';
import { usageRoutes } from './usage.js';
import { usageReadBackRoutes } from './usage-read-back.js';
import { webhookEndpointRoutes } from './webhook-endpoints.js';
import { webhookEventRoutes } from './webhook-events.js';

/** Every route under the public base path, one plugin per resource. */
export const publicRoutes: FastifyPluginAsyncZod = async (app) => {
  await app.register(metaRoutes);
  await app.register(usageRoutes);
  await app.register(usageReadBackRoutes);
  await app.register(customerRoutes);
  await app.register(creditRoutes);
  await app.register(alertRoutes);
  await app.register(entitlementRoutes);
  await app.register(productRoutes);
  await app.register(subscriptionRoutes);
  await app.register(invoiceRoutes);
  await app.register(creditNoteRoutes);
  await app.register(portalSessionRoutes);
  await app.register(webhookEndpointRoutes);
  await app.register(webhookEventRoutes);
  await app.register(mcpRoutes);
  await app.register(llmsRoutes);
};
