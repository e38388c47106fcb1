import type { ApiInstance } from '../types.js';

/**
 * One line per response: request id, organization, route pattern (never the raw query), status,
 * latency. Headers and bodies are never logged, so keys and secrets cannot leak through here.
 */
export function registerAccessLog(app: ApiInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      // request.log already carries reqId
      {
        orgId: request.auth?.orgId,
        method: request.method,
        route: request.routeOptions.url ?? 'unknown',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request',
    );
    done();
  });
}
