import type { Logger } from '../../libs/log/index.js';
import type { DependencyCheck } from '../../libs/observability/index.js';
import { databaseCheck, redisCheck } from '../../libs/observability/index.js';
import type { Platform } from '../../libs/platform/index.js';
import {
  openUsageIngest,
  type UsageIngest,
  type UsagePipeline,
  type UsageSink,
} from '../../libs/usage/index.js';
import { nodeHttpTransport } from './node-http.js';
import { type IngestServer, startIngestServer } from './server.js';
import type { HttpTransport } from './transport.js';
import { isNativeUws, loadUws, uwsTransport } from './uws.js';

export interface RunningIngest {
  /** The core, for another front end in the same process (the api in `npm start`). */
  usage: UsageIngest;
  pipeline: UsagePipeline;
  server: IngestServer;
  /** What this service's readiness depends on: database, Redis, the usage log. */
  checks(): DependencyCheck[];
  /** Drains HTTP, then the pipeline (last produce call, key releases). The platform stays open. */
  close(): Promise<void>;
}

/** What the ingest service needs to serve: the database (keys, items), Redis, the usage log. */
export function ingestReadinessChecks(platform: Platform, pipeline: UsagePipeline): DependencyCheck[] {
  return [
    databaseCheck(platform.db),
    ...(platform.redis ? [redisCheck(platform.redis)] : []),
    ...pipeline.checks(),
  ];
}

/**
 * The ingest service on a platform: the usage pipeline of this process's mode and the uWS server
 * on `port` (0 picks a free one). `services/ingest/main.ts` and `npm start` both build it here.
 */
export async function startIngest(options: {
  platform: Platform;
  host: string;
  port: number;
  bodyLimit: number;
  /** INGEST_TRUSTED_PROXY: uWebSockets.js behind a proxy that checks header bytes, else Node's server. */
  trustedProxy: boolean;
  /** INGEST_ALLOW_FALLBACK_SERVER: Node's server where uWebSockets.js has no native binary. */
  allowFallbackServer: boolean;
  /** Readers of the in-process log beside the stores (the embedded mode's guardrails). */
  usageListeners?: readonly UsageSink[];
}): Promise<RunningIngest> {
  const { platform } = options;
  const pipeline = await openUsageIngest(platform, { listeners: options.usageListeners });
  const checks = () => ingestReadinessChecks(platform, pipeline);
  let server: IngestServer;
  try {
    server = await startIngestServer({
      transport: ingestTransport({
        trustedProxy: options.trustedProxy,
        allowFallback: options.allowFallbackServer,
        log: platform.log,
      }),
      host: options.host,
      port: options.port,
      bodyLimit: options.bodyLimit,
      authenticator: platform.authenticator,
      usage: pipeline.ingest,
      checks,
      log: platform.log,
    });
  } catch (error) {
    await pipeline.close();
    throw error;
  }
  return {
    usage: pipeline.ingest,
    pipeline,
    server,
    checks,
    async close() {
      await server.close();
      await pipeline.close();
    },
  };
}

/**
 * uWebSockets.js reads header values wrongly at their edges (see uws.ts), so it serves only where
 * a proxy in front has checked them; anywhere else Node's HTTP server does. Its native code exists
 * for Node 18 and 20 on Linux x64 only: elsewhere the service says so and refuses to start, unless
 * INGEST_ALLOW_FALLBACK_SERVER accepts Node's HTTP server (correct, but more CPU per request).
 */
export function ingestTransport(options: {
  trustedProxy: boolean;
  allowFallback?: boolean;
  log?: Logger;
}): HttpTransport {
  if (!options.trustedProxy) return nodeHttpTransport();
  const uws = loadUws();
  if (isNativeUws(uws)) return uwsTransport(uws);
  const problem =
    `uWebSockets.js has no native binary for Node ${process.version} on ${process.platform}-${process.arch} ` +
    '(it has them for Node 18 and 20 on Linux x64)';
  if (!options.allowFallback) {
    throw new Error(
      `${problem}; run Node 20, or set INGEST_ALLOW_FALLBACK_SERVER=true to serve on Node's HTTP server`,
    );
  }
  options.log?.error(
    { node: process.version },
    `${problem}: serving on Node's HTTP server (INGEST_ALLOW_FALLBACK_SERVER)`,
  );
  return nodeHttpTransport();
}
