import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { buildApiApp } from '../../services/api/app.js';
import type { ApiInstance } from '../../services/api/types.js';
import { createTestPlatform, type TestPlatform } from './platform.js';
import { recordCredentials } from './run-log.js';

export interface TestApi extends TestPlatform {
  app: ApiInstance;
  /** `inject` with the path relative to the base path and an optional API key. */
  request(options: InjectOptions & { path: string; key?: string }): Promise<LightMyRequestResponse>;
}

/** The api service on a fresh database (see createTestPlatform), ready for `inject`. */
export async function startTestApi(options: Parameters<typeof createTestPlatform>[0] = {}): Promise<TestApi> {
  const base = await createTestPlatform(options);
  const app = await buildApiApp({
    platform: base.platform,
    bodyLimit: base.config.BODY_LIMIT_BYTES,
    publicBaseUrl: undefined,
    webhookAllowLocalhost: true,
  });
  await app.ready();
  return {
    ...base,
    app,
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
      await base.close();
    },
  };
}
