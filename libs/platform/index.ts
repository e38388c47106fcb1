import { ApiKeyAuthenticator } from '../auth/index.js';
import { type CommonConfig, reaching } from '../config/index.js';
import { type Database, openDatabase, type Queryable } from '../db/index.js';
import type { DependencyGuard } from '../dependency-guard/index.js';
import { createLogger, type Logger } from '../log/index.js';
import {
  MemoryRateLimitStore,
  RateLimiter,
  type RateLimitStore,
  RedisRateLimitStore,
} from '../rate-limit/index.js';
import { connectRedis, type Redis, redisGuard } from '../redis/index.js';

/**
 * What every process builds once at start-up and passes down: the database, Redis (or its
 * in-process twin), the authenticator and the rate limiter. Nothing here is created on import.
 */
export interface Platform {
  config: CommonConfig;
  log: Logger;
  db: Database;
  dbMode: 'postgres' | 'embedded-server' | 'embedded-client';
  /**
   * The embedded database this process serves, reached without its loopback socket: one
   * autocommit statement per query (the in-process usage log's writes). Absent otherwise.
   */
  directDb?: Queryable;
  /** Absent in the embedded mode. */
  redis: Redis | undefined;
  /** Bounds and fails fast every call of a Redis store; absent with `redis`. */
  redisGuard: DependencyGuard | undefined;
  rateLimitStore: RateLimitStore;
  rateLimiter: RateLimiter;
  authenticator: ApiKeyAuthenticator;
  close(): Promise<void>;
}

export async function openPlatform(
  config: CommonConfig,
  service: string,
  options: { log?: Logger; now?: () => number } = {},
): Promise<Platform> {
  const log = options.log ?? createLogger({ level: config.LOG_LEVEL, service });
  const opened = await openDatabase(config, `billing-${service}`, log);
  let redis: Redis | undefined;
  try {
    redis = config.REDIS_URL
      ? await reaching('REDIS_URL', connectRedis(config.REDIS_URL, config.REDIS_COMMAND_TIMEOUT_MS))
      : undefined;
  } catch (error) {
    await opened.close();
    throw error;
  }
  const guard = redis ? redisGuard(redis, config.REDIS_COMMAND_TIMEOUT_MS, log) : undefined;
  const rateLimitStore = redis ? new RedisRateLimitStore(redis, guard) : new MemoryRateLimitStore();
  const now = options.now;
  const authenticator = new ApiKeyAuthenticator(opened.db, {
    ttlSeconds: config.AUTH_CACHE_TTL_SECONDS,
    maxEntries: config.AUTH_CACHE_MAX_ENTRIES,
    ...(now ? { now } : {}),
  });
  const stopWatchingRevocations = authenticator.watchRevocations((error) =>
    log.debug({ err: error }, 'could not read revoked API keys; retrying'),
  );
  return {
    config,
    log,
    db: opened.db,
    dbMode: opened.mode,
    ...(opened.direct ? { directDb: opened.direct } : {}),
    redis,
    redisGuard: guard,
    rateLimitStore,
    rateLimiter: new RateLimiter(rateLimitStore, {
      keyPrefix: config.REDIS_KEY_PREFIX,
      ...(now ? { now } : {}),
    }),
    authenticator,
    async close() {
      stopWatchingRevocations();
      guard?.close();
      redis?.disconnect();
      await opened.close();
    },
  };
}
