import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { metaRoutes } from './meta.js';

/** Every route under the public base path, one plugin per resource. */
export const publicRoutes: FastifyPluginAsyncZod = async (app) => {
  await app.register(metaRoutes);
};
