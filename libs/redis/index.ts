import { Redis } from 'ioredis';

export type { Redis } from 'ioredis';
export { BulkScript, type ScriptArgument } from './bulk-script.js';

const COMMAND_TIMEOUT_MS = 2000;

/**
 * One connection per process. Commands fail fast while Redis is unreachable (no offline queue,
 * one retry), so a request gets 503 at once instead of hanging until its client gives up.
 */
export async function connectRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    // A Redis that accepts and never answers (frozen, overloaded) fails the command instead of
    // holding the request until its client gives up: the answer is a 503 with Retry-After.
    commandTimeout: COMMAND_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(times * 100, 2000),
  });
  // Connection errors surface on the commands that need Redis; the event must not crash the process.
  redis.on('error', () => {});
  await redis.connect();
  return redis;
}
