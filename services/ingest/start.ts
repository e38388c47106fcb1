import type { DependencyCheck } from '../../libs/observability/index.js';
import { databaseCheck, redisCheck } from '../../libs/observability/index.js';
import type { Platform } from '../../libs/platform/index.js';
import { openUsageIngest, type UsageIngest, type UsagePipeline } from '../../libs/usage/index.js';
import { nodeHttpTransport } from './node-http.js';
import { type IngestServer, startIngestServer } from './server.js';
import type { HttpTransport } from './transport.js';
import { uwsTransport } from './uws.js';

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
}): Promise<RunningIngest> {
  const { platform } = options;
  const pipeline = await openUsageIngest(platform);
  const checks = () => ingestReadinessChecks(platform, pipeline);
  let server: IngestServer;
  try {
    server = await startIngestServer({
      transport: ingestTransport({ trustedProxy: options.trustedProxy }),
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
 * a proxy in front has checked them; anywhere else Node's HTTP server does.
 */
export function ingestTransport(options: { trustedProxy: boolean }): HttpTransport {
  return options.trustedProxy ? uwsTransport() : nodeHttpTransport();
}
