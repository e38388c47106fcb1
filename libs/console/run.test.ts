import { describe, expect, it } from 'vitest';
import { COMMANDS } from './commands/index.js';
import { runConsole } from './run.js';

/** Flags are judged before any configuration or database is opened: no environment is needed. */
async function console_(...argv: string[]) {
  return consoleIn({}, ...argv);
}

async function consoleIn(env: NodeJS.ProcessEnv, ...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runConsole(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) }, env);
  return { code, stdout, stderr };
}

describe('console flags', () => {
  it.each(COMMANDS.map((command) => [command.name] as const))(
    '%s refuses a flag it does not take, naming it (exit 2): a typo is never ignored',
    async (name) => {
      const refused = await console_(...name.split(' '), '--frobnicate', 'x');
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toMatch(new RegExp(`^invalid flags for '${name}':\\n`));
      expect(refused.stderr).toMatch(/\n {2}--frobnicate: /);
    },
  );

  it('exits 2 naming the setting when the environment is invalid, before opening the database', async () => {
    // port 1 refuses connections: were it tried, the answer would be exit 1 about the database
    const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/billing', PORT: 'eighty' };
    const refused = await consoleIn(env, 'org', 'list');
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/PORT/);
    expect(refused.stderr).not.toMatch(/database/);
  });
});
