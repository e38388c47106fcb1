import {
  answerOpsRequest,
  type DependencyCheck,
  databaseCheck,
  OPS_PATHS,
  redisCheck,
  requestInstruments,
} from '../../../libs/observability/index.js';
import type { ApiInstance } from '../types.js';

/**
 * `/healthz`, `/readyz` and `/metrics` beside (not under) the public base path, without auth and
 * outside the OpenAPI document; and the request metrics of every route, by route pattern so an
 * id in a path never makes a new time series. Readiness checks what the api's requests use: the
 * database, Redis, and what the usage pipeline names (Kafka, or ClickHouse when the api writes it
 * itself); with Kafka, ClickHouse is the sinks' and billing's, and its outage must not take the
 * public API out of a load balancer.
 */
export function registerOperations(app: ApiInstance): void {
  const { platform } = app.deps;
  const checks = (): DependencyCheck[] => [
    databaseCheck(platform.db),
    ...(platform.redis ? [redisCheck(platform.redis)] : []),
    ...(app.deps.extraReadinessChecks?.() ?? []),
  ];
  for (const path of Object.values(OPS_PATHS)) {
    app.get(path, { config: { auth: 'none' }, schema: { hide: true } }, async (request, reply) => {
      const answer = await answerOpsRequest(request.routeOptions.url ?? path, checks);
      if (!answer) return reply.callNotFound();
      return reply
        .code(answer.status)
        .header('content-type', answer.contentType)
        .header('cache-control', 'no-store')
        .send(answer.body);
    });
  }

  const metrics = requestInstruments('api');
  app.addHook('onResponse', (request, reply, done) => {
    const { requests, duration } = metrics(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
    );
    requests.inc();
    duration.observe(reply.elapsedTime / 1000);
    done();
  });
}
