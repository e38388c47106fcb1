import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Command, defineCommand } from './command.js';
import { integerFlag, jsonFlag, textFlag } from './flags.js';
import { runConsole } from './run.js';

async function console_(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runConsole(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) }, {});
  return { code, stdout, stderr };
}

/** A command of the tests' own, so each branch of the refusals can be reached without a database. */
const thing = defineCommand({
  name: 'thing do',
  summary: 'Do a thing',
  usage: '--count N --name N [--items JSON] [--from ISO] [--limit N]',
  flags: z
    .strictObject({
      count: integerFlag(1),
      name: textFlag,
      items: jsonFlag(z.array(z.object({ id: z.number() }))).optional(),
      from: z.date().default(new Date(Date.UTC(2026, 0, 2))),
      limit: integerFlag(1, 100).default(25).describe('Page size.'),
    })
    .refine((flags) => flags.count !== 13, 'Thirteen is refused as a whole.'),
  run: async () => ({}),
});
const other = defineCommand({
  name: 'thing-other',
  summary: 'Another thing',
  usage: '',
  flags: z.strictObject({}),
  run: async () => ({}),
});

async function own(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runConsole(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) }, {}, [
    thing,
    other,
  ] as Command[]);
  return { code, stdout, stderr };
}

const USAGE = 'usage: thing do --count N --name N [--items JSON] [--from ISO] [--limit N]\n';

describe('console refusals of flags', () => {
  it('lists every problem, the flags given twice first, then the usage line', async () => {
    const refused = await own('thing', 'do', '--name', 'A', '--name', 'B', '--count', '0');
    expect(refused).toEqual({
      code: 2,
      stdout: '',
      stderr: `invalid flags for 'thing do':\n  --name: Given twice; give it once.\n  --count: Must be at least 1.\n${USAGE}`,
    });
  });

  it('refuses a flag given twice even when both values are valid', async () => {
    const refused = await own('thing', 'do', '--name', 'A', '--count', '1', '--count', '2');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `invalid flags for 'thing do':\n  --count: Given twice; give it once.\n${USAGE}`,
    );
  });

  it('says a flag left out is required, and one given without a value needs one', async () => {
    const refused = await own('thing', 'do', '--name');
    expect(refused.stderr).toBe(
      `invalid flags for 'thing do':\n  --count: Required: give --count <value>.\n` +
        `  --name: Needs a value: --name <value>.\n${USAGE}`,
    );
  });

  it('names an unknown flag as unknown, with or without a value', async () => {
    for (const argv of [['--frobnicate'], ['--frobnicate', 'x']]) {
      const refused = await own('thing', 'do', '--count', '1', '--name', 'A', ...argv);
      expect(refused.stderr, argv.join(' ')).toBe(
        `invalid flags for 'thing do':\n  --frobnicate: Unknown field.\n${USAGE}`,
      );
    }
  });

  it('keeps the message of a field inside a flag, and of a rule over all the flags', async () => {
    const nested = await own('thing', 'do', '--count', '1', '--name', 'A', '--items', '[{"id":"x"}]');
    expect(nested.stderr).toBe(`invalid flags for 'thing do':\n  --items.0.id: Must be a number.\n${USAGE}`);
    const whole = await own('thing', 'do', '--count', '13', '--name', 'A');
    expect(whole.stderr).toBe(
      `invalid flags for 'thing do':\n  --(body): Thirteen is refused as a whole.\n${USAGE}`,
    );
  });
});

describe('console help, word by word', () => {
  it("prints one command's flags aligned, each required, optional or its default", async () => {
    const asked = await own('thing', 'do', '--help');
    expect(asked).toEqual({
      code: 0,
      stderr: '',
      stdout:
        'usage: npx billing thing do --count N --name N [--items JSON] [--from ISO] [--limit N]\n\n' +
        'Do a thing\n\nflags:\n' +
        '  --count   required\n' +
        '  --name    required\n' +
        '  --items   optional\n' +
        '  --from    default: 2026-01-02T00:00:00.000Z\n' +
        '  --limit   default: 25; Page size.\n',
    });
  });

  it('prints a command without flags nor usage as its name and summary alone', async () => {
    expect(await own('help', 'thing-other')).toEqual({
      code: 0,
      stderr: '',
      stdout: 'usage: npx billing thing-other\n\nAnother thing\n',
    });
  });

  it('lists a group by its whole first word: `credit` is not `credit-note`', async () => {
    const { stdout } = await console_('help', 'credit');
    expect(stdout).toMatch(/\n {2}credit grant {10}/);
    expect(stdout).not.toMatch(/credit-note/);
    expect((await own('help', 'thing')).stdout).not.toMatch(/thing-other/);
  });

  it('answers no words with the list of commands (exit 2), an unknown one naming it with its group', async () => {
    const nothing = await own();
    expect(nothing.code).toBe(2);
    expect(nothing.stdout).toBe('');
    expect(nothing.stderr).toMatch(/^usage: npx billing <command> \[--flags\]/);
    expect(nothing.stderr).toMatch(/\n {2}thing do {15}Do a thing\n {25}--count N/);
    const inGroup = await console_('org');
    expect(inGroup.code).toBe(2);
    expect(inGroup.stderr).toMatch(/^unknown command: org\n\nusage: /);
    expect(inGroup.stderr).toMatch(/org set-limit/);
    expect(inGroup.stderr).not.toMatch(/customer create/);
    const unknown = await own('help', 'nothing', 'here');
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/^unknown command: nothing here\n\nusage: [\s\S]*thing-other/);
  });
});
