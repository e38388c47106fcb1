import { type Redis as Client, Redis, ReplyError } from 'ioredis';
import { DependencyGuard } from '../dependency-guard/index.js';
import type { Logger } from '../log/index.js';

export type { Redis } from 'ioredis';
export { BulkScript } from './bulk-script.js';
export type { ScriptArgument } from './resp.js';

/**
 * One connection per process. Commands fail fast while Redis is unreachable (no offline queue,
 * one retry), so a request gets 503 at once instead of hanging until its client gives up.
 */
export async function connectRedis(url: string, commandTimeoutMs: number): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    // A Redis that accepts and never answers (frozen, overloaded) fails the command instead of
    // holding the request until its client gives up: the answer is a 503 with Retry-After.
    commandTimeout: commandTimeoutMs,
    retryStrategy: (times) => Math.min(times * 100, 2000),
  });
  // Connection errors surface on the commands that need Redis; the event must not crash the process.
  let connectionError: Error | undefined;
  redis.on('error', (error: Error) => {
    connectionError = error;
  });
  try {
    await redis.connect();
  } catch (error) {
    // Else the client keeps reconnecting for ever in the background of a start that failed.
    redis.disconnect();
    // ioredis rejects with "Connection is closed."; the socket's error says why (ECONNREFUSED ...)
    if (connectionError && connectionError !== error) {
      throw new Error(`${(error as Error).message} (${connectionError.message})`, { cause: connectionError });
    }
    throw error;
  }
  return redis;
}

/**
 * Redis' outage guard: a command past `commandTimeoutMs`, or one failed by a lost or refused
 * connection (anything but Redis' own reply errors), marks Redis down; requests then get 503 at
 * once until a PING answers.
 */
export function redisGuard(redis: Client, commandTimeoutMs: number, log: Logger): DependencyGuard {
  return new DependencyGuard({
    name: 'redis',
    label: 'The rate-limit and idempotency store',
    waitMs: commandTimeoutMs,
    whenSlow: 'fail',
    probe: () => redis.ping(),
    isOutage: (error) => !(error instanceof ReplyError),
    log,
  });
}
