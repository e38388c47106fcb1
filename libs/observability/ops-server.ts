import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkReadiness, type DependencyCheck } from './health.js';
import { METRICS_CONTENT_TYPE, renderMetrics } from './metrics.js';

/** The three operational routes every service answers, outside the public base path, without auth. */
export const OPS_PATHS = { health: '/healthz', ready: '/readyz', metrics: '/metrics' } as const;

export interface OpsResponse {
  status: number;
  contentType: string;
  body: string;
}

/**
 * The answer to an operational route, or undefined for any other path; shared by the Fastify
 * api, the uWebSockets.js ingest service and the plain HTTP server below.
 */
export async function answerOpsRequest(
  path: string,
  checks: () => readonly DependencyCheck[],
  /** What /readyz reports beside its checks (how the process serves), for an operator to read. */
  details?: Record<string, unknown>,
): Promise<OpsResponse | undefined> {
  switch (path) {
    case OPS_PATHS.health:
      return json(200, { status: 'ok' });
    case OPS_PATHS.ready: {
      const readiness = await checkReadiness(checks());
      return json(readiness.ready ? 200 : 503, {
        status: readiness.ready ? 'ready' : 'not_ready',
        ...readiness,
        ...(details ? { details } : {}),
      });
    }
    case OPS_PATHS.metrics:
      return { status: 200, contentType: METRICS_CONTENT_TYPE, body: await renderMetrics() };
    default:
      return undefined;
  }
}

function json(status: number, body: unknown): OpsResponse {
  return { status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
}

export interface OpsServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** A small HTTP server for processes without a public HTTP front end (dispatcher, sinks). */
export async function startOpsServer(options: {
  host: string;
  port: number;
  checks: () => readonly DependencyCheck[];
}): Promise<OpsServer> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: 'method not allowed' }));
      return;
    }
    answerOpsRequest(path, options.checks).then(
      (answer) => {
        const { status, contentType, body } = answer ?? json(404, { error: 'not found' });
        response.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
        response.end(request.method === 'HEAD' ? undefined : body);
      },
      () => {
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: 'internal error' }));
      },
    );
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
