import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Platform } from '../../libs/platform/index.js';
import { portalUsageSource } from '../../libs/portal/index.js';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { openUsageIngest, type UsagePipeline, type UsageSink } from '../../libs/usage/index.js';
import { buildApiApp } from '../../services/api/app.js';
import type { ApiDeps, ApiInstance } from '../../services/api/types.js';
import { createTestPlatform, type TestPlatform } from './platform.js';
import { recordCredentials } from './run-log.js';

export interface TestApi extends TestPlatform {
  app: ApiInstance;
  /** The usage ingest pipeline the usage routes run on (in-process log unless KAFKA_BROKERS is in `env`). */
  usage: UsagePipeline;
  /** `inject` with the path relative to the base path and an optional API key. */
  request(options: InjectOptions & { path: string; key?: string }): Promise<LightMyRequestResponse>;
}

/**
 * The api service on a fresh database (see createTestPlatform), ready for `inject`. Usage events go
 * through the in-process log into this database; pass `env: { KAFKA_BROKERS, KAFKA_USAGE_TOPIC }`
 * to publish them to Kafka instead.
 */
export async function startTestApi(
  options: Parameters<typeof createTestPlatform>[0] & {
    deps?: (platform: Platform) => Partial<ApiDeps>;
    /** Further readers of the in-process log (the embedded mode's guardrails). */
    listeners?: (platform: Platform) => UsageSink[];
  } = {},
): Promise<TestApi> {
  const base = await createTestPlatform(options);
  const usage = await openUsageIngest(base.platform, { listeners: options.listeners?.(base.platform) });
  const app = await buildApiApp({
    platform: base.platform,
    bodyLimit: base.config.BODY_LIMIT_BYTES,
    invoiceCacheBytes: base.config.INVOICE_CACHE_MB * 1024 * 1024,
    publicBaseUrl: undefined,
    publicUrl: base.config.PUBLIC_URL,
    webhookAllowLocalhost: true,
    webhookMaxAttempts: base.config.WEBHOOK_MAX_ATTEMPTS,
    usageIngest: usage.ingest,
    usageRead: usage.readStores,
    portalUsage: portalUsageSource(base.platform.db, usage.readStores),
    extraReadinessChecks: usage.checks,
    ...options.deps?.(base.platform),
  });
  await app.ready();
  return {
    ...base,
    app,
    usage,
    async request({ path, key, headers, ...rest }) {
      const response = await app.inject({
        ...rest,
        url: `${BASE_PATH}${path}`,
        headers: { ...headers, ...(key ? { authorization: `Bearer ${key}` } : {}) },
      });
      recordCredentials(response.body);
      return response;
    },
    async close() {
      await app.close();
      await usage.close();
      await base.close();
    },
  };
}
