import { runConsole } from '../libs/console/index.js';

const exitCode = await runConsole(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
// The command is done: exit rather than wait for the event loop to drain, which a database
// connection stuck in its handshake (a port that never answers) would keep alive for good. The
// empty writes' callbacks run once everything written before them is flushed.
process.stderr.write('', () => process.stdout.write('', () => process.exit(exitCode)));
