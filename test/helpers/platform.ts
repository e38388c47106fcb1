import { type CommonConfig, embeddedSettings, loadConfig } from '../../libs/config/index.js';
import { openPlatform, type Platform } from '../../libs/platform/index.js';
import { connectRedis } from '../../libs/redis/index.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { runLogger } from './run-log.js';
import { testServices, uniqueName } from './services.js';

export interface TestPlatform {
  platform: Platform;
  database: TestDatabase;
  /** The full configuration the platform was built from (embedded settings: every setting). */
  config: ReturnType<typeof testConfig>;
  close(): Promise<void>;
}

/**
 * The configuration a test process would have: this file's database and Redis prefix, quiet logs.
 * `overrides` are env-style strings, parsed by the same schema as production.
 */
export function testConfig(database: TestDatabase, overrides: Record<string, string | undefined> = {}) {
  const { redisUrl } = testServices();
  return loadConfig(embeddedSettings, {
    APP_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: `${uniqueName('redis')}:`,
    ...overrides,
  });
}

/**
 * A Platform on a fresh database. `redis: false` gives the embedded in-process stores instead.
 * Closing drops the database and this file's Redis keys.
 */
export async function createTestPlatform(
  options: { redis?: boolean; now?: () => number; env?: Record<string, string | undefined> } = {},
): Promise<TestPlatform> {
  const database = await createTestDatabase();
  const config = testConfig(database, {
    ...(options.redis === false ? { REDIS_URL: undefined } : {}),
    ...options.env,
  });
  const platform = await openPlatform(config as CommonConfig, 'test', {
    log: runLogger(),
    ...(options.now ? { now: options.now } : {}),
  });
  return {
    platform,
    database,
    config,
    async close() {
      await platform.close();
      await database.drop();
      if (config.REDIS_URL) await deleteRedisKeys(config.REDIS_URL, config.REDIS_KEY_PREFIX);
    },
  };
}

async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  if (!prefix) return;
  const redis = await connectRedis(url, 2000);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
