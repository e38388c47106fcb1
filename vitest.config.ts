import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Three projects, run in this order: `unit` (pure logic beside the code, no service),
 * `integration` (under test/, against real Postgres, Redis, ClickHouse and the Kafka test broker,
 * which the global set-up finds or starts; each file gets its own database, Redis prefix,
 * ClickHouse database and Kafka topics, so files run in parallel) and `embedded` (npm start and
 * PGlite, one file at a time, needing no service).
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          // test/architecture: the import rules of libs/README.md, read from the files alone;
          // bench/: the guard of its autocannon adapter; clients/: the Node client's pure parts
          include: [
            'libs/**/*.test.ts',
            'services/**/*.test.ts',
            'bin/**/*.test.ts',
            'bench/**/*.test.ts',
            'test/architecture/**/*.test.ts',
            'clients/*/src/**/*.test.ts',
          ],
          environment: 'node',
          // Shared modules, as the integration project (test/architecture/shared-workers.test.ts
          // holds both to the rules that makes safe)
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/embedded/**', 'test/architecture/**'],
          environment: 'node',
          globalSetup: ['test/setup/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
          pool: 'forks',
          maxWorkers: 3,
          // A worker keeps its modules from one file to the next: importing the app anew per file
          // cost more than the tests of most files. Safe because each file opens its own database,
          // Redis prefix and topics, mocks no module and restores what it changes (fake timers).
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        // PGlite (WASM) is CPU-bound: `npm start` and the embedded database are measured on their
        // own, after the integration files, as a newcomer's quiet machine would run them.
        test: {
          name: 'embedded',
          include: ['test/embedded/**/*.test.ts'],
          environment: 'node',
          testTimeout: 90_000,
          hookTimeout: 60_000,
          pool: 'forks',
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
