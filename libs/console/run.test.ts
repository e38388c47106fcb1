import { describe, expect, it } from 'vitest';
import { COMMANDS } from './commands/index.js';
import { runConsole } from './run.js';

/** Flags are judged before any configuration or database is opened: no environment is needed. */
async function console_(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runConsole(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) }, {});
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
});
