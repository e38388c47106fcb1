import swaggerUi from '@fastify/swagger-ui';
import { baseUrlOf } from '../public-url.js';
import type { ApiInstance } from '../types.js';
import { publicOpenApiDocument } from './openapi.js';

export const API_REFERENCE_PATH = '/docs';

/**
 * GET /docs: an interactive reference (Swagger UI, its assets served from the package, nothing
 * from a CDN, no validator badge fetched from swagger.io) of the same document /openapi.json
 * serves. Public, like llms.txt, which carries the same content: a developer reads it before
 * having a key; "Try it out" sends the key they enter to the API itself.
 */
export async function registerApiReference(app: ApiInstance): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...(route.config as object), auth: 'none' };
      route.schema = { ...route.schema, hide: true };
    });
    await scope.register(swaggerUi, {
      routePrefix: API_REFERENCE_PATH,
      // the package's default allows fonts and styles from any https origin and images from
      // validator.swagger.io; the page needs none of them
      staticCSP: true,
      transformStaticCSP: () =>
        "default-src 'self'; base-uri 'self'; frame-ancestors 'none'; object-src 'none'; script-src 'self'; " +
        "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; form-action 'self'",
      uiConfig: { validatorUrl: null, deepLinking: true, defaultModelsExpandDepth: 0 },
      transformSpecification: (_document, request) => publicOpenApiDocument(app, baseUrlOf(request)),
    });
  });
}
