/** What the global set-up hands every integration test file (through vitest's provide/inject). */
export interface TestServices {
  /** Admin URL: test files create their own databases through it. */
  databaseUrl: string;
  /** A migrated database that test databases are copied from. */
  templateDatabase: string;
  /** Prefix of every database (Postgres and ClickHouse) this run creates. */
  runPrefix: string;
  redisUrl: string;
  clickhouseUrl: string;
  kafkaBrokers: string[];
  /** Log file of every in-process logger of the run (test/helpers/run-log.ts). */
  runLogFile: string;
  /** Keys and signing secrets seen during the run, one per line: the log must contain none. */
  runSecretsFile: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    services: TestServices;
  }
}
