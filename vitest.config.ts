import { defineConfig } from 'vitest/config';

/**
 * Two projects: `unit` (pure logic beside the code, no service) and `integration` (under test/,
 * against real Postgres, Redis, ClickHouse and the Kafka test broker, which the global set-up
 * finds or starts). Each integration file gets its own database, Redis prefix, ClickHouse
 * database and Kafka topics, so files run in parallel.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['libs/**/*.test.ts', 'services/**/*.test.ts', 'bin/**/*.test.ts'],
          environment: 'node',
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/setup/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
          pool: 'forks',
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
