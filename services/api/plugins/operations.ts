import {
  answerOpsRequest,
  type DependencyCheck,
  databaseCheck,
  httpRequestDuration,
  httpRequests,
  OPS_PATHS,
  redisCheck,
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

  const metrics = requestMetrics();
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

type RequestMetrics = {
  requests: ReturnType<typeof httpRequests.labels>;
  duration: ReturnType<typeof httpRequestDuration.labels>;
};

/**
 * The request counter's and histogram's children of each method, route pattern and status, looked
 * up once (libs/observability/hot-metrics.ts: keep the child where it runs per request), by nested
 * maps so that finding one builds no key. Bounded: route patterns, not paths.
 */
function requestMetrics(): (method: string, route: string, status: number) => RequestMetrics {
  const byRoute = new Map<string, Map<string, Map<number, RequestMetrics>>>();
  return (method, route, status) => {
    let byMethod = byRoute.get(route);
    if (!byMethod) {
      byMethod = new Map();
      byRoute.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (!byStatus) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let found = byStatus.get(status);
    if (!found) {
      const labels = { service: 'api', method, route, status: String(status) };
      found = { requests: httpRequests.labels(labels), duration: httpRequestDuration.labels(labels) };
      byStatus.set(status, found);
    }
    return found;
  };
}
