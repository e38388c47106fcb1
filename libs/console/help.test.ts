import { describe, expect, it } from 'vitest';
import { COMMANDS } from './commands/index.js';
import { runConsole } from './run.js';

/** Help needs no database nor configuration: it is answered before either is opened. */
async function console_(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runConsole(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) }, {});
  return { code, stdout, stderr };
}

describe('console help', () => {
  it.each(COMMANDS.map((command) => [command.name, command] as const))(
    '%s --help prints its usage, summary and every flag (exit 0)',
    async (name, command) => {
      const flags = Object.keys(command.flags.shape);
      const asked = await console_(...name.split(' '), '--help');
      expect(asked.code).toBe(0);
      expect(asked.stderr).toBe('');
      expect(
        asked.stdout.startsWith(`usage: npx billing ${name}${command.usage ? ` ${command.usage}` : ''}\n`),
      ).toBe(true);
      expect(asked.stdout).toContain(`\n${command.summary}\n`);
      for (const flag of flags)
        expect(asked.stdout).toMatch(new RegExp(`\\n  --${flag} +(required|optional|default: )`));
      // the usage line names exactly the flags the command parses
      const named = new Set([...command.usage.matchAll(/--([a-z0-9-]+)/g)].map((match) => match[1]));
      expect([...named].sort(), 'flags in the usage line').toEqual([...flags].sort());
      expect((await console_('help', ...name.split(' '))).stdout).toBe(asked.stdout);
    },
  );

  it('says which flags are required and what a flag left out defaults to', async () => {
    const { stdout } = await console_('customer', 'list', '--help');
    expect(stdout).toMatch(/\n {2}--org +required\n/);
    expect(stdout).toMatch(/\n {2}--limit +default: 25; Page size, 1-100\.\n/);
    expect(stdout).toMatch(/\n {2}--offset +default: 0;/);
  });

  it('answers --help before looking at the other flags, and reads `--help org` as a topic', async () => {
    const bad = await console_('customer', 'list', '--limit', 'lots', '--help');
    expect(bad.code).toBe(0);
    expect(bad.stdout).toMatch(/^usage: npx billing customer list /);
    const topic = await console_('--help', 'org');
    expect(topic.code).toBe(0);
    expect(topic.stdout).toMatch(/org create[\s\S]*org list/);
    expect(topic.stdout).not.toMatch(/customer create/);
  });
});
