import { runConsole } from '../libs/console/index.js';

process.exitCode = await runConsole(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
