/**
 * `npm run openapi`: writes the live OpenAPI document to openapi.json at the repository root, for
 * client generators. The api is built exactly as it serves (the same routes and schemas) but
 * never listens, and nothing it would need to answer a request is reached: its database is a
 * pool that is never queried, its stores the in-process twins. test/api/openapi-file.test.ts fails
 * when the committed file and the live document differ.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ApiKeyAuthenticator } from '../libs/auth/index.js';
import { embeddedSettings, loadConfig } from '../libs/config/index.js';
import { Database } from '../libs/db/index.js';
import { createLogger } from '../libs/log/index.js';
import type { Platform } from '../libs/platform/index.js';
import { MemoryRateLimitStore, RateLimiter } from '../libs/rate-limit/index.js';
import { openUsageIngest } from '../libs/usage/index.js';
import { apiDepsFrom, buildApiApp } from '../services/api/app.js';
import { publicOpenApiDocument } from '../services/api/plugins/openapi.js';

/** The server the committed document names: the local default of README's two commands. */
export const OPENAPI_FILE_BASE_URL = 'http://127.0.0.1:8080';
export const OPENAPI_FILE = path.resolve(import.meta.dirname, '../openapi.json');

export async function liveOpenApiDocument(): Promise<unknown> {
  const config = loadConfig(embeddedSettings, { LOG_LEVEL: 'silent' });
  const db = new Database('postgres://openapi-export@127.0.0.1:1/never-queried', { poolSize: 1 });
  const rateLimitStore = new MemoryRateLimitStore();
  const platform: Platform = {
    config,
    log: createLogger({ level: 'silent', service: 'openapi' }),
    db,
    dbMode: 'postgres',
    redis: undefined,
    redisGuard: undefined,
    rateLimitStore,
    rateLimiter: new RateLimiter(rateLimitStore, { keyPrefix: '' }),
    authenticator: new ApiKeyAuthenticator(db, { ttlSeconds: 30, maxEntries: 1 }),
    close: () => db.close(),
  };
  const usage = await openUsageIngest(platform);
  const app = await buildApiApp(
    apiDepsFrom(config, platform, {
      ingest: usage.ingest,
      readStores: usage.readStores,
      checks: usage.checks,
    }),
  );
  try {
    await app.ready();
    return publicOpenApiDocument(app, OPENAPI_FILE_BASE_URL);
  } finally {
    await app.close();
    await usage.close();
    await platform.close();
  }
}

export function formatOpenApiFile(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  await writeFile(OPENAPI_FILE, formatOpenApiFile(await liveOpenApiDocument()));
  process.stdout.write(`wrote ${path.relative(process.cwd(), OPENAPI_FILE)}\n`);
}
