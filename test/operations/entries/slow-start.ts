/**
 * An entry point whose start-up says it is starting, then takes START_MS more before it installs
 * its shutdown handlers: the window in which a stop signal used to kill a service on the spot.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startOrExit, stopOnSignals } from '../../../libs/config/index.js';

const line = (message: string) => process.stdout.write(`${message}\n`);

await startOrExit('the slow service', async () => {
  line('starting');
  await sleep(Number(process.env.START_MS ?? 500));
  line('started');
});

stopOnSignals({
  timeoutMs: 5_000,
  log: {
    info: (_fields: object, message: string) => line(message),
    error: (...args: unknown[]) => line(String(args.at(-1))),
  },
  async stop(signal) {
    line(`stopping on ${signal}`);
  },
});
