import { describe, expect, it } from 'vitest';
import {
  apiSettings,
  ConfigError,
  dispatcherSettings,
  embeddedSettings,
  loadConfig,
  reaching,
  withTimeout,
} from './index.js';

describe('configuration', () => {
  it('gives the embedded defaults when nothing is set', () => {
    const config = loadConfig(embeddedSettings, {});
    expect(config).toMatchObject({
      HOST: '127.0.0.1',
      PORT: 8080,
      INGEST_PORT: 8081,
      DATA_DIR: './data',
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.WEBHOOK_RETRY_DELAYS_MS).toEqual([1000, 2000, 4000, 8000]);
  });

  it('reports every problem at once', () => {
    try {
      loadConfig(apiSettings, {
        PORT: 'eighty',
        DATABASE_URL: 'mysql://x',
        REDIS_URL: 'nope',
        LOG_LEVEL: 'loud',
      });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems.join('\n');
      for (const name of ['PORT', 'DATABASE_URL', 'REDIS_URL', 'LOG_LEVEL']) expect(problems).toContain(name);
    }
  });

  it('treats an empty variable as unset, spaces only too, and reads values without surrounding spaces', () => {
    expect(loadConfig(apiSettings, { DATABASE_URL: '', PORT: '' }).PORT).toBe(8080);
    expect(loadConfig(apiSettings, { PORT: '  ' }).PORT).toBe(8080);
    expect(loadConfig(apiSettings, { PORT: ' 9000 ' }).PORT).toBe(9000);
  });

  it('refuses numbers that are not plain digits, URLs without a host and empty list items', () => {
    const problemsOf = (env: Record<string, string>) => {
      try {
        loadConfig(embeddedSettings, env);
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    for (const value of ['1e3', '0x10', '-1', '8.5', '80 80']) {
      expect(problemsOf({ PORT: value }), value).toEqual([expect.stringMatching(/^PORT: /)]);
    }
    for (const value of ['postgres:nohost', 'postgres://', 'postgresql:///db']) {
      expect(problemsOf({ DATABASE_URL: value }), value).toEqual([
        expect.stringMatching(/^DATABASE_URL: .*host/),
      ]);
    }
    expect(problemsOf({ DATABASE_URL: 'postgres:///billing?host=/var/run/postgresql' })).toEqual([]);
    expect(problemsOf({ REDIS_URL: 'redis://' })).toHaveLength(1);
    for (const name of ['SHUTDOWN_TIMEOUT_MS', 'DISPATCHER_POLL_MS', 'WEBHOOK_TIMEOUT_MS']) {
      expect(problemsOf({ [name]: '2147483648' }), name).toEqual([
        expect.stringMatching(new RegExp(`^${name}: must be at most 2147483647 ms`)),
      ]);
      expect(problemsOf({ [name]: '2147483647' }), name).toEqual([]);
    }
    for (const value of [',', '1000,,2000', '1000, x', '-5']) {
      const problems = problemsOf({ WEBHOOK_RETRY_DELAYS_MS: value });
      expect(problems.length, value).toBeGreaterThan(0);
      for (const problem of problems) expect(problem).toMatch(/^WEBHOOK_RETRY_DELAYS_MS/);
    }
  });

  it('does not check the ports of processes npm start does not run', () => {
    expect(loadConfig(embeddedSettings, { DISPATCHER_PORT: 'x', SINKS_PORT: 'y' })).not.toHaveProperty(
      'SINKS_PORT',
    );
  });

  it('allows localhost webhooks by default except in production, unless set explicitly', () => {
    expect(loadConfig(dispatcherSettings, {}).WEBHOOK_ALLOW_LOCALHOST).toBe(true);
    expect(loadConfig(dispatcherSettings, { APP_ENV: 'production' }).WEBHOOK_ALLOW_LOCALHOST).toBe(false);
    expect(
      loadConfig(dispatcherSettings, { APP_ENV: 'production', WEBHOOK_ALLOW_LOCALHOST: 'true' })
        .WEBHOOK_ALLOW_LOCALHOST,
    ).toBe(true);
  });

  it('parses lists', () => {
    const config = loadConfig(dispatcherSettings, {
      KAFKA_BROKERS: 'a:9092, b:9093',
      WEBHOOK_RETRY_DELAYS_MS: '10,20',
    });
    expect(config.KAFKA_BROKERS).toEqual(['a:9092', 'b:9093']);
    expect(config.WEBHOOK_RETRY_DELAYS_MS).toEqual([10, 20]);
  });

  it('names the setting whose service a start-up step could not reach', async () => {
    await expect(
      reaching('CLICKHOUSE_URL', Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1'))),
    ).rejects.toThrow('cannot reach CLICKHOUSE_URL: connect ECONNREFUSED 127.0.0.1:1');
    await expect(reaching('DATABASE_URL', Promise.resolve(7))).resolves.toBe(7);
  });
});

describe('withTimeout', () => {
  it("passes the promise's outcome on, or fails once the time is up, and leaves no timer behind", async () => {
    await expect(withTimeout(Promise.resolve('answer'), 1000)).resolves.toBe('answer');
    await expect(withTimeout(Promise.reject(new Error('refused')), 1000)).rejects.toThrow('refused');
    await expect(withTimeout(new Promise(() => {}), 10)).rejects.toThrow('no answer within 10 ms');
  });
});
