import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CommonConfig } from '../../libs/config/index.js';
import { Database } from '../../libs/db/index.js';
import { DependencyUnavailableError } from '../../libs/dependency-guard/index.js';
import { createLogger } from '../../libs/log/index.js';
import { openPlatform, type Platform } from '../../libs/platform/index.js';
import { connectRedis, type Redis } from '../../libs/redis/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { testConfig } from '../helpers/platform.js';
import { freeTcpPort, type OwnRedisServer, startOwnRedisServer } from '../helpers/redis-server.js';
import { runLogger } from '../helpers/run-log.js';

/** A local port nothing listens on: connecting is refused at once. */
const CLOSED = 'redis://127.0.0.1:1';

let database: TestDatabase;
let ownRedis: OwnRedisServer;
let observer: Redis;

beforeAll(async () => {
  [database, ownRedis] = await Promise.all([createTestDatabase('platform'), startOwnRedisServer()]);
  observer = await connectRedis(ownRedis.url, 2000);
  await observer.client('SETNAME', 'observer');
});
afterAll(async () => {
  observer?.disconnect();
  await Promise.all([database?.drop(), ownRedis?.stop()]);
});
afterEach(() => vi.restoreAllMocks());

/** The clients connected to the test's own Redis, the observer left out. */
async function otherRedisClients(): Promise<number> {
  const list = (await observer.client('LIST')) as string;
  return list.split('\n').filter((line) => line.includes('addr=') && !line.includes('name=observer')).length;
}

function open(overrides: Record<string, string | undefined>): Promise<Platform> {
  return openPlatform(testConfig(database, overrides) as CommonConfig, 'platform-test', { log: runLogger() });
}

describe('openPlatform', () => {
  it('fails naming REDIS_URL when Redis cannot be reached, and closes the database it opened first', async () => {
    const close = vi.spyOn(Database.prototype, 'close');
    // the socket's own error is in the message, not only ioredis' "Connection is closed."
    await expect(open({ REDIS_URL: CLOSED })).rejects.toThrow(/^cannot reach REDIS_URL: .*ECONNREFUSED/);
    expect(close).toHaveBeenCalledTimes(1);
  });

  it('leaves no client reconnecting to a Redis that could not be reached at start-up', async () => {
    const port = await freeTcpPort();
    await expect(open({ REDIS_URL: `redis://127.0.0.1:${port}` })).rejects.toThrow(
      /^cannot reach REDIS_URL: /,
    );
    // Redis comes up on that port after the start failed: nothing of the failed start connects.
    let connections = 0;
    const late = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => late.listen(port, '127.0.0.1', resolve));
    try {
      // Past the longest reconnect delay of connectRedis (2 s).
      await new Promise((resolve) => setTimeout(resolve, 2200));
      expect(connections).toBe(0);
    } finally {
      await new Promise((resolve) => late.close(resolve));
    }
  });

  it('does not reach Redis when the database cannot be opened', async () => {
    // The embedded database's directory, locked by a live process (this one): opening it fails.
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'platform-locked-'));
    try {
      const port = await freeTcpPort();
      mkdirSync(path.join(dataDir, 'pgdata'), { recursive: true });
      writeFileSync(path.join(dataDir, 'pgdata.lock'), JSON.stringify({ pid: process.pid, port }));
      await expect(
        open({
          DATABASE_URL: undefined,
          DATA_DIR: dataDir,
          EMBEDDED_DB_PORT: String(port),
          REDIS_URL: ownRedis.url,
        }),
      ).rejects.toThrow(/is served by process/);
      expect(await otherRedisClients()).toBe(0);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('guards Redis: a call Redis leaves unanswered fails within REDIS_COMMAND_TIMEOUT_MS, the next is refused at once', async () => {
    const platform = await open({ REDIS_URL: ownRedis.url, REDIS_COMMAND_TIMEOUT_MS: '1000' });
    try {
      expect(platform.redisGuard?.name).toBe('redis');
      await platform.rateLimitStore.consume(`${platform.config.REDIS_KEY_PREFIX}warm`, 10, 60);
      ownRedis.pause();
      try {
        let started = performance.now();
        await expect(
          platform.rateLimitStore.consume(`${platform.config.REDIS_KEY_PREFIX}frozen`, 10, 60),
        ).rejects.toBeInstanceOf(DependencyUnavailableError);
        expect(performance.now() - started).toBeGreaterThanOrEqual(900);
        expect(platform.redisGuard?.available).toBe(false);

        started = performance.now();
        await expect(
          platform.rateLimitStore.consume(`${platform.config.REDIS_KEY_PREFIX}frozen`, 10, 60),
        ).rejects.toBeInstanceOf(DependencyUnavailableError);
        // Refused by the guard without a command sent: not another wait of the command timeout.
        expect(performance.now() - started).toBeLessThan(500);
      } finally {
        ownRedis.resume();
      }
      await vi.waitFor(() => expect(platform.redisGuard?.available).toBe(true), { timeout: 10_000 });
    } finally {
      await platform.close();
    }
  });

  it('closes its Redis connection when closed', async () => {
    const platform = await open({ REDIS_URL: ownRedis.url });
    expect(await otherRedisClients()).toBe(1);
    await platform.close();
    await vi.waitFor(async () => expect(await otherRedisClients()).toBe(0), { timeout: 5000 });
  });

  it('stops reading revoked API keys once closed', async () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'debug',
      service: 'platform-test',
      destination: { write: (line: string) => lines.push(line) },
    });
    const platform = await openPlatform(
      testConfig(database, { REDIS_URL: undefined }) as CommonConfig,
      'platform-test',
      { log },
    );
    // An unknown key, cached as such: from now on each poll reads the revoked keys.
    await expect(platform.authenticator.authenticate(`Bearer sk_test_${'x'.repeat(43)}`)).rejects.toThrow(
      /invalid or has been revoked/,
    );
    await platform.close();
    // A watcher left running would fail on the closed pool at its next poll (every second).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(lines.filter((line) => line.includes('revoked API keys'))).toEqual([]);
  });

  it('without REDIS_URL runs on in-process stores and no Redis guard', async () => {
    const platform = await open({ REDIS_URL: undefined });
    try {
      expect(platform.redis).toBeUndefined();
      expect(platform.redisGuard).toBeUndefined();
      const bucket = 'in-process';
      expect(await platform.rateLimitStore.consume(bucket, 1, 60)).toMatchObject({ allowed: true });
      expect(await platform.rateLimitStore.consume(bucket, 1, 60)).toMatchObject({ allowed: false });
    } finally {
      await platform.close();
    }
  });
});
