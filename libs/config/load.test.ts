import { describe, expect, it } from 'vitest';
import { apiSettings, ConfigError, dispatcherSettings, embeddedSettings, loadConfig } from './index.js';

describe('configuration', () => {
  it('gives the embedded defaults when nothing is set', () => {
    const config = loadConfig(embeddedSettings, {});
    expect(config).toMatchObject({
      HOST: '127.0.0.1',
      PORT: 8080,
      INGEST_PORT: 8081,
      DISPATCHER_PORT: 8082,
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

  it('treats an empty variable as unset', () => {
    expect(loadConfig(apiSettings, { DATABASE_URL: '', PORT: '' }).PORT).toBe(8080);
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
});
