import { createHash, randomUUID } from 'node:crypto';
import net from 'node:net';
import { Redis as RedisClient } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BulkScript, connectRedis, type Redis, redisGuard } from '../../libs/redis/index.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices } from '../helpers/services.js';

let redis: Redis;

beforeAll(async () => {
  redis = await connectRedis(testServices().redisUrl, 2000);
});
afterAll(() => redis.disconnect());

/** A script no Redis has seen yet: its first EVALSHA is refused with NOSCRIPT. */
function unseenScript(body: string): { script: BulkScript; sha: string; lua: string } {
  const lua = `-- ${randomUUID()}\n${body}`;
  return { script: new BulkScript(lua), lua, sha: createHash('sha1').update(lua).digest('hex') };
}

describe('BulkScript', () => {
  it('loads a script Redis does not know, then calls it by its sha; keys and arguments arrive intact', async () => {
    const { script, sha } = unseenScript(
      "local out = {} for i = 1, #KEYS do out[#out + 1] = KEYS[i] .. '=' .. ARGV[i] end return out",
    );
    expect(await redis.script('EXISTS', sha)).toEqual([0]);
    const keys = Array.from({ length: 2000 }, (_, i) => `bulk:${i}:ключ-🙂`);
    const values = keys.map((_, i) => (i % 2 ? `v${i}` : i));
    const expected = keys.map((key, i) => `${key}=${values[i]}`);

    expect(await script.call(redis, keys.length, [...keys, ...values])).toEqual(expected);
    expect(await redis.script('EXISTS', sha)).toEqual([1]);
    expect(await script.call(redis, keys.length, [...keys, ...values])).toEqual(expected);
  });

  it('calls a script Redis knows by its sha alone, never sending the script again', async () => {
    const { script, sha } = unseenScript('return KEYS[1]');
    const key = `bulk:by-sha:${randomUUID()}`;
    const monitor = await redis.monitor();
    const sent: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.includes(key)) sent.push(args.slice(0, 2));
    });
    try {
      expect(await script.call(redis, 1, [key])).toBe(key);
      await vi.waitFor(() => expect(sent).toHaveLength(2));
      expect(sent).toEqual([
        ['evalsha', sha],
        ['eval', expect.stringContaining('return KEYS[1]')], // MONITOR shows the script escaped
      ]);
      expect(await script.call(redis, 1, [key])).toBe(key);
      await vi.waitFor(() => expect(sent).toHaveLength(3));
      expect(sent[2]).toEqual(['evalsha', sha]);
    } finally {
      monitor.disconnect();
    }
  });

  it("passes the script's own errors on", async () => {
    const { script } = unseenScript("return redis.error_reply('ERR refused by the script')");
    await expect(script.call(redis, 0, [])).rejects.toThrow('refused by the script');
    await expect(script.call(redis, 0, [])).rejects.toThrow('refused by the script');
  });

  it('runs a script that fails once: its writes before the error are not made twice', async () => {
    const { script } = unseenScript(
      "redis.call('INCR', KEYS[1]) return redis.error_reply('ERR after a write')",
    );
    const key = `bulk:failed-once:${randomUUID()}`;
    try {
      await expect(script.call(redis, 1, [key])).rejects.toThrow('after a write');
      expect(await redis.get(key)).toBe('1');
      await expect(script.call(redis, 1, [key])).rejects.toThrow('after a write');
      expect(await redis.get(key)).toBe('2');
    } finally {
      await redis.del(key);
    }
  });
});

describe('connectRedis', () => {
  it('fails a command Redis does not answer within the command timeout', async () => {
    const client = await connectRedis(testServices().redisUrl, 200);
    try {
      // BLPOP on an empty list holds its answer for 3 s: a Redis that accepts and never answers
      await expect(client.blpop(`bulk:never:${randomUUID()}`, 3)).rejects.toThrow('Command timed out');
    } finally {
      client.disconnect();
    }
  });

  it('refuses a command at once while the connection is down, instead of queueing it', async () => {
    const client = await connectRedis(testServices().redisUrl, 2000);
    try {
      const id = await client.client('ID');
      const closed = new Promise((resolve) => client.once('close', resolve));
      await redis.client('KILL', 'ID', String(id));
      await closed;
      await expect(client.get('x')).rejects.toThrow(/enableOfflineQueue options is false/);
    } finally {
      client.disconnect();
    }
  });

  it('fails a command in flight after one retry when the connection is lost and Redis stays unreachable', async () => {
    // a proxy to Redis that the test takes away: the client's reconnections are then refused
    const target = new URL(testServices().redisUrl);
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 6379), target.hostname);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as net.AddressInfo;
    const client = await connectRedis(`redis://127.0.0.1:${port}`, 60_000);
    try {
      const inFlight = client.blpop(`bulk:never:${randomUUID()}`, 30).catch((error: unknown) => error);
      await vi.waitFor(() => expect(sockets.size).toBe(2));
      proxy.close();
      for (const socket of sockets) socket.destroy();
      const started = Date.now();
      expect(String(await inFlight)).toMatch(/max retries per request/i);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      client.disconnect();
    }
  });

  it('fails a start against a Redis that refuses, naming why, and leaves no client reconnecting', async () => {
    // a port nothing listens on: taken, then freed
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    // a spy that calls through, counting the client's connection attempts; the reconnect delay
    // (ioredis' setTimeout) runs on a fake clock, so a retry can be waited out without sleeping
    const connect = vi.spyOn(RedisClient.prototype, 'connect');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await expect(connectRedis(`redis://127.0.0.1:${port}`, 2000)).rejects.toThrow(/ECONNREFUSED/);
      await vi.advanceTimersByTimeAsync(10_000); // past every retry delay (2 s at most)
      expect(connect).toHaveBeenCalledTimes(1);
    } finally {
      vi.useRealTimers();
      for (const client of connect.mock.contexts) (client as Redis).disconnect();
      connect.mockRestore();
    }
  });
});

describe('redisGuard', () => {
  it('gives a command up after the command timeout: the wait is the bound, whatever a probe says', async () => {
    const blocked = await connectRedis(testServices().redisUrl, 10_000);
    // the probe goes through a connection that answers: only the wait itself can fail the call
    const guard = redisGuard(redis, 200, runLogger());
    try {
      await expect(guard.run(() => blocked.blpop(`bulk:never:${randomUUID()}`, 3))).rejects.toThrow(
        'redis is unavailable (no answer within 200 ms)',
      );
      expect(guard.available).toBe(false);
    } finally {
      guard.close();
      blocked.disconnect();
    }
  });

  it("stays up on Redis' own reply errors, and goes down when the connection is lost", async () => {
    const { script } = unseenScript("return redis.error_reply('ERR refused by the script')");
    const guard = redisGuard(redis, 2000, runLogger());
    const lost = await connectRedis(testServices().redisUrl, 2000);
    const lostGuard = redisGuard(lost, 2000, runLogger());
    try {
      await expect(guard.run(() => script.call(redis, 0, []))).rejects.toThrow('refused by the script');
      await expect(guard.run(() => redis.call('NO-SUCH-COMMAND'))).rejects.toThrow(/unknown command/i);
      expect(guard.available).toBe(true);

      lost.disconnect();
      await expect(lostGuard.run(() => lost.get('x'))).rejects.toThrow();
      expect(lostGuard.available).toBe(false);
    } finally {
      guard.close();
      lostGuard.close();
    }
  });
});
