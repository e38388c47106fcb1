import { createLogger } from '../log/index.js';
import { MemoryRateLimitStore } from '../rate-limit/index.js';
import { connectRedis } from '../redis/index.js';
import {
  MemoryUsageDedupStore,
  openUsageCounter,
  openUsageEventLog,
  openUsageReadStores,
  RedisUsageDedupStore,
  type UsageCounter,
  type UsageReadStores,
} from '../usage/index.js';
import type { ConsoleContext } from './command.js';

/**
 * The usage read-back's stores for one command (credit balances, top-up checks), on this
 * deployment's log, closed when `work` ends.
 */
export async function withReadStores<T>(
  { config, db }: ConsoleContext,
  work: (stores: UsageReadStores) => Promise<T>,
): Promise<T> {
  const log = createLogger({ level: 'warn', service: 'console' });
  const { eventLog, clickhouse } = await openUsageEventLog(config, db, log);
  const stores = openUsageReadStores(config, db, eventLog, log);
  try {
    return await work(stores);
  } finally {
    await stores.close();
    await eventLog.close();
    await clickhouse?.close();
  }
}

/**
 * The per-item period counters for one command (entitlements), on this deployment's Redis (its
 * memory twin without REDIS_URL: a counter this process does not have is rebuilt from Postgres).
 */
export async function withUsageCounter<T>(
  context: ConsoleContext,
  work: (counter: UsageCounter) => Promise<T>,
): Promise<T> {
  const { config, db } = context;
  return withReadStores(context, async (stores) => {
    const redis = config.REDIS_URL
      ? await connectRedis(config.REDIS_URL, config.REDIS_COMMAND_TIMEOUT_MS)
      : undefined;
    try {
      const store = redis
        ? new RedisUsageDedupStore(redis, config.REDIS_KEY_PREFIX)
        : new MemoryUsageDedupStore(new MemoryRateLimitStore());
      return await work(openUsageCounter(config, db, store, stores));
    } finally {
      redis?.disconnect();
    }
  });
}
