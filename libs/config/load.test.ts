import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  apiSettings,
  ConfigError,
  consoleSettings,
  dispatcherSettings,
  embeddedSettings,
  ingestSettings,
  loadConfig,
  reaching,
  sinkSettings,
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

  it('lists every problem on a line of its own under one heading, in an error named ConfigError', () => {
    let error = new Error('loaded');
    try {
      loadConfig(apiSettings, { PORT: 'eighty', LOG_LEVEL: 'loud' });
    } catch (caught) {
      error = caught as Error;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const lines = error.message.split('\n');
    expect(lines[0]).toBe('Invalid configuration:');
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^ {2}- LOG_LEVEL: /),
      '  - PORT: must be a whole number (digits only)',
    ]);
    expect(error.name).toBe('ConfigError');
    expect(String(error)).toMatch(/^ConfigError: Invalid configuration:/);
  });

  it("names a problem of the whole environment, which no one variable carries, '(env)'", () => {
    const schema = z
      .object({ FROM: z.string(), TO: z.string() })
      .refine((env) => env.FROM < env.TO, 'FROM must come before TO');
    expect(() => loadConfig(schema, { FROM: 'b', TO: 'a' })).toThrow(
      expect.objectContaining({ problems: ['(env): FROM must come before TO'] }),
    );
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

  it('reads a list of delays with spaces around its items', () => {
    expect(
      loadConfig(dispatcherSettings, { WEBHOOK_RETRY_DELAYS_MS: '10, 20 ,30' }).WEBHOOK_RETRY_DELAYS_MS,
    ).toEqual([10, 20, 30]);
  });

  it('takes a broker port from 1 to 65535 and refuses 0 and 65536', () => {
    for (const port of [1, 65535]) {
      expect(loadConfig(ingestSettings, { KAFKA_BROKERS: `kafka:${port}` }).KAFKA_BROKERS).toEqual([
        `kafka:${port}`,
      ]);
    }
    for (const port of [0, 65536]) {
      expect(() => loadConfig(ingestSettings, { KAFKA_BROKERS: `kafka:${port}` }), String(port)).toThrow(
        /KAFKA_BROKERS.0: must be host:port with a port from 1 to 65535/,
      );
    }
  });

  it('names the setting whose service a start-up step could not reach', async () => {
    await expect(
      reaching('CLICKHOUSE_URL', Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1'))),
    ).rejects.toThrow('cannot reach CLICKHOUSE_URL: connect ECONNREFUSED 127.0.0.1:1');
    await expect(reaching('DATABASE_URL', Promise.resolve(7))).resolves.toBe(7);
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:1');
    await expect(reaching('CLICKHOUSE_URL', Promise.reject(refused))).rejects.toHaveProperty(
      'cause',
      refused,
    );
  });
});

describe('boundaries and defaults of the settings', () => {
  const problemsOf = (schema: Parameters<typeof loadConfig>[0], env: Record<string, string>) => {
    try {
      loadConfig(schema, env);
      return [];
    } catch (error) {
      return (error as ConfigError).problems;
    }
  };

  it("gives every default the README's configuration table states", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const rows = [...readme.matchAll(/^\| `([A-Z_]+)` \| (`[^`|]*`|empty) \|/gm)].map(
      ([, name, cell]) => [name!, cell === 'empty' ? '' : cell!.slice(1, -1)] as const,
    );
    // every process's settings, each with nothing set
    const defaults: Record<string, unknown> = {
      ...loadConfig(consoleSettings, {}),
      ...loadConfig(sinkSettings, {}),
      ...loadConfig(ingestSettings, {}),
      ...loadConfig(dispatcherSettings, {}),
      ...loadConfig(apiSettings, {}),
    };
    const checked = rows.filter(([name]) => name !== 'HEALTH_PORT'); // the image's, no process reads it
    expect(checked.length).toBeGreaterThan(40);
    for (const [name, documented] of checked) {
      expect(defaults, name).toHaveProperty(name);
      const expected = /^\d+$/.test(documented)
        ? Number(documented)
        : documented === 'true' || documented === 'false'
          ? documented === 'true'
          : /^\d+(,\d+)+$/.test(documented)
            ? documented.split(',').map(Number)
            : documented;
      expect(defaults[name], name).toEqual(expected);
    }
  });

  it('takes a port from 0 (any free one) to 65535 and refuses 65536, naming the variable', () => {
    expect(loadConfig(apiSettings, { PORT: '0' }).PORT).toBe(0);
    expect(loadConfig(apiSettings, { PORT: '65535' }).PORT).toBe(65535);
    expect(problemsOf(apiSettings, { PORT: '65536' })).toEqual([expect.stringMatching(/^PORT: /)]);
    expect(loadConfig(ingestSettings, { INGEST_PORT: '0' }).INGEST_PORT).toBe(0);
    expect(problemsOf(sinkSettings, { SINKS_PORT: '65536' })).toEqual([
      expect.stringMatching(/^SINKS_PORT: /),
    ]);
  });

  it('refuses 0 for a count or a delay, where 1 is the least; a linger may be 0 up to 1000 ms', () => {
    for (const name of [
      'DATABASE_POOL_SIZE',
      'BODY_LIMIT_BYTES',
      'SHUTDOWN_TIMEOUT_MS',
      'DATABASE_STALL_MS',
    ]) {
      expect(problemsOf(apiSettings, { [name]: '0' }), name).toEqual([
        expect.stringMatching(new RegExp(`^${name}: `)),
      ]);
      expect(loadConfig(apiSettings, { [name]: '1' }), name).toHaveProperty(name, 1);
    }
    expect(loadConfig(ingestSettings, { KAFKA_LINGER_MS: '0' }).KAFKA_LINGER_MS).toBe(0);
    expect(loadConfig(ingestSettings, { KAFKA_LINGER_MS: '1000' }).KAFKA_LINGER_MS).toBe(1000);
    expect(problemsOf(ingestSettings, { KAFKA_LINGER_MS: '1001' })).toEqual([
      expect.stringMatching(/^KAFKA_LINGER_MS: /),
    ]);
  });

  it('reads true/1/yes and false/0/no as booleans and refuses any other word, naming the variable', () => {
    for (const value of ['true', '1', 'yes']) {
      expect(loadConfig(ingestSettings, { INGEST_TRUSTED_PROXY: value }).INGEST_TRUSTED_PROXY, value).toBe(
        true,
      );
    }
    for (const value of ['false', '0', 'no']) {
      expect(loadConfig(ingestSettings, { USAGE_COUNTER: value }).USAGE_COUNTER, value).toBe(false);
    }
    for (const value of ['maybe', 'on', '2']) {
      expect(problemsOf(sinkSettings, { SINKS_GUARDRAILS: value }), value).toEqual([
        expect.stringMatching(/^SINKS_GUARDRAILS: /),
      ]);
    }
  });

  it('keeps WEBHOOK_ALLOW_LOCALHOST=false outside production, in the api and npm start as in the dispatcher', () => {
    for (const schema of [apiSettings, dispatcherSettings, embeddedSettings]) {
      expect(loadConfig(schema, { WEBHOOK_ALLOW_LOCALHOST: 'false' }).WEBHOOK_ALLOW_LOCALHOST).toBe(false);
      expect(loadConfig(schema, {}).WEBHOOK_ALLOW_LOCALHOST).toBe(true);
      expect(loadConfig(schema, { APP_ENV: 'production' }).WEBHOOK_ALLOW_LOCALHOST).toBe(false);
    }
  });

  it('refuses a broker list without a broker and names that go into SQL or group ids with other characters', () => {
    expect(problemsOf(ingestSettings, { KAFKA_BROKERS: ', ,' })).toEqual([
      expect.stringMatching(/^KAFKA_BROKERS: /),
    ]);
    expect(problemsOf(ingestSettings, { CLICKHOUSE_DATABASE: 'billing; DROP TABLE x' })).toEqual([
      expect.stringMatching(/^CLICKHOUSE_DATABASE: /),
    ]);
    expect(problemsOf(sinkSettings, { KAFKA_CONSUMER_GROUP_PREFIX: 'eu west' })).toEqual([
      expect.stringMatching(/^KAFKA_CONSUMER_GROUP_PREFIX: /),
    ]);
    expect(
      loadConfig(sinkSettings, { KAFKA_CONSUMER_GROUP_PREFIX: 'eu-west.1_' }).KAFKA_CONSUMER_GROUP_PREFIX,
    ).toBe('eu-west.1_');
  });
});

describe('withTimeout', () => {
  it("passes the promise's outcome on, or fails once the time is up, and leaves no timer behind", async () => {
    await expect(withTimeout(Promise.resolve('answer'), 1000)).resolves.toBe('answer');
    await expect(withTimeout(Promise.reject(new Error('refused')), 1000)).rejects.toThrow('refused');
    await expect(withTimeout(new Promise(() => {}), 10)).rejects.toThrow('no answer within 10 ms');
  });

  it('fails at the very millisecond given, not before', async () => {
    vi.useFakeTimers();
    try {
      let failed: unknown;
      void withTimeout(new Promise(() => {}), 1000).catch((error: unknown) => {
        failed = error;
      });
      await vi.advanceTimersByTimeAsync(999);
      expect(failed).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect(failed).toMatchObject({ message: 'no answer within 1000 ms' });
    } finally {
      vi.useRealTimers();
    }
  });

  it('clears its timer once the promise settles: nothing keeps the process waiting', async () => {
    vi.useFakeTimers();
    try {
      await expect(withTimeout(Promise.resolve('answer'), 60_000)).resolves.toBe('answer');
      await expect(withTimeout(Promise.reject(new Error('refused')), 60_000)).rejects.toThrow('refused');
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
