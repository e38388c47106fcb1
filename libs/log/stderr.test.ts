import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe("the logger's stderr destination", () => {
  it('writes its lines to stderr and leaves stdout to the answer', async () => {
    const logger = fileURLToPath(new URL('./index.ts', import.meta.url));
    const script = `import { createLogger } from ${JSON.stringify(logger)};
createLogger({ level: 'info', service: 'console', destination: 'stderr' }).info('to stderr');
process.stdout.write('the answer\\n');`;
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        cwd: fileURLToPath(new URL('../..', import.meta.url)),
      },
    );
    expect(stdout).toBe('the answer\n');
    expect(JSON.parse(stderr)).toMatchObject({ level: 'info', service: 'console', msg: 'to stderr' });
  });
});
