import { describe, expect, it } from 'vitest';
import { ConfigError, ingestSettings, loadConfig, sinkSettings } from '../../libs/config/index.js';

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('KAFKA_BROKERS validation', () => {
  it('refuses a broker port outside 1-65535, naming the variable', () => {
    for (const value of ['kafka:99999', 'kafka:0', 'kafka:65536', 'kafka-1:9092,kafka-2:70000']) {
      const problems = problemsOf(() => loadConfig(ingestSettings, { KAFKA_BROKERS: value }));
      expect(problems.join('\n'), value).toMatch(/^KAFKA_BROKERS\.\d+: .*1 to 65535/);
      expect(problems, value).toHaveLength(1);
    }
    // nothing after the port: not a second port, not a suffix
    for (const value of ['kafka', 'kafka:9092:9093', 'kafka:9092x']) {
      expect(
        problemsOf(() => loadConfig(sinkSettings, { KAFKA_BROKERS: value })),
        value,
      ).toEqual(['KAFKA_BROKERS.0: must be host:port']);
    }
  });

  it('accepts host:port lists', () => {
    const config = loadConfig(sinkSettings, { KAFKA_BROKERS: 'kafka-1:9092, 10.0.0.2:65535' });
    expect(config.KAFKA_BROKERS).toEqual(['kafka-1:9092', '10.0.0.2:65535']);
  });
});
