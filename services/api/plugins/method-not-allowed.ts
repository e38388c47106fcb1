import { ApiError } from '../../../libs/errors/index.js';
import type { ApiInstance } from '../types.js';

/**
 * OPTIONS and TRACE included: the API serves no CORS (keys stay out of browsers), so a preflight is
 * a method the path does not take like any other, not a 404 that reads as "no such path".
 */
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'] as const;
/** What Allow lists, in this order: HEAD too, which Fastify serves beside every GET. */
const ALLOWABLE = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * Fastify answers an unregistered method on a known path with 404; the contract says 405 with an
 * Allow header. Routes are collected as they are added, and once every route is known each path
 * gets the missing methods as 405 routes (hidden from the OpenAPI document).
 */
export function collectRoutesForMethodNotAllowed(app: ApiInstance): () => void {
  const methodsByUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const known = methodsByUrl.get(route.url) ?? new Set<string>();
    for (const method of methods) known.add(method);
    methodsByUrl.set(route.url, known);
  });
  return () => {
    for (const [url, known] of methodsByUrl) {
      const missing = METHODS.filter((m) => !known.has(m));
      if (missing.length === 0) continue;
      const allow = ALLOWABLE.filter((m) => known.has(m)).join(', ');
      app.route({
        method: missing,
        url,
        config: { auth: 'if-valid' },
        schema: { hide: true } as object,
        handler: async () => {
          throw new ApiError('METHOD_NOT_ALLOWED', `This path supports ${allow}.`, {
            headers: { Allow: allow },
          });
        },
      });
    }
  };
}
