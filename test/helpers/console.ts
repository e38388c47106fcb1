import { runConsole } from '../../libs/console/index.js';

/**
 * Runs console commands in-process, exactly as bin/console.ts does, with `env()` as their
 * environment (read at each run: tests set it up in beforeAll), capturing what they print.
 */
export function inProcessConsole(env: () => Record<string, string>) {
  return async (...argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await runConsole(
      argv,
      { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) },
      env(),
    );
    return { code, stdout, stderr, json: () => JSON.parse(stdout) };
  };
}

/** The environment a console command runs with against `databaseUrl`: quiet, embedded usage reads. */
export function consoleEnv(databaseUrl: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'silent',
    PORT: '8080',
    HOST: '127.0.0.1',
    CLICKHOUSE_URL: '',
  };
}
