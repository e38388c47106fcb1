import type { z } from 'zod';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment once; every problem is reported together, not one per restart. */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  // An empty variable means "not set", as in most deployment tools; so does one of spaces only.
  // Values are read without surrounding whitespace (a stray space from a .env file is no typo).
  const present = Object.fromEntries(
    Object.entries(env)
      .map(([name, value]) => [name, value?.trim()] as const)
      .filter(([, value]) => value !== undefined && value !== ''),
  );
  const result = schema.safeParse(present);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => `${issue.path.join('.') || '(env)'}: ${issue.message}`),
  );
}

/** For entry points: print every problem and exit non-zero instead of starting half-configured. */
export function loadConfigOrExit<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<S> {
  try {
    return loadConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * A SIGTERM or SIGINT that arrives while an entry point starts is held until stopOnSignals takes
 * over, so a stop sent the moment a service says it listens is never the default action (killed
 * on the spot, mid-request) during the few turns before its stop is known. One listener serves
 * both phases: removing a signal's last listener drops a signal delivered but not yet dispatched.
 */
const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;
let heldSignal: NodeJS.Signals | undefined;
let stopOnSignal: ((signal: NodeJS.Signals) => void) | undefined;
let listening = false;

function onShutdownSignal(signal: NodeJS.Signals): void {
  if (stopOnSignal) {
    stopOnSignal(signal);
  } else if (heldSignal) {
    // a second signal while starting: the operator does not want to wait for the start-up
    process.exit(1);
  } else {
    heldSignal = signal;
  }
}

function listenForShutdownSignals(): void {
  if (listening) return;
  listening = true;
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, onShutdownSignal);
}

/**
 * For entry points: start-up that fails (a port in use, Redis or the database unreachable, the
 * broker missing) is one line on stderr and exit code 1, not an unhandled rejection's stack trace.
 * From here on a shutdown signal is never lost: one that arrives before stopOnSignals is installed
 * runs the stop as soon as it is.
 */
export async function startOrExit<T>(service: string, start: () => Promise<T>): Promise<T> {
  listenForShutdownSignals();
  try {
    return await start();
  } catch (error) {
    process.stderr.write(`${service} could not start: ${(error as Error)?.message ?? String(error)}\n`);
    process.exit(1);
  }
}

/** What stopOnSignals writes to: the service's logger. */
interface ShutdownLog {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
  error(message: string): void;
}

/**
 * For entry points: on the first SIGTERM or SIGINT, `stop` (stop accepting, finish what is in
 * flight, close the connections), then exit 0; a failure is logged and exits 1, and so does a
 * stop still running after `timeoutMs` (`deadlineMessage` says what that leaves undone). The exit
 * is explicit: an idle keep-alive connection must not keep the process alive past its stop.
 */
export function stopOnSignals(options: {
  timeoutMs: number;
  log: ShutdownLog;
  deadlineMessage?: string;
  stop: (signal: NodeJS.Signals) => Promise<void>;
}): void {
  let stopping = false;
  const stopOn = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      options.log.error(options.deadlineMessage ?? 'shutdown deadline passed; exiting');
      process.exit(1);
    }, options.timeoutMs).unref();
    const started = Date.now();
    options.log.info({ signal }, 'shutting down');
    try {
      await options.stop(signal);
      options.log.info({ signal, ms: Date.now() - started }, 'shut down');
      process.exit(0);
    } catch (error) {
      options.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  stopOnSignal = (signal) => void stopOn(signal);
  listenForShutdownSignals();
  if (heldSignal) stopOnSignal(heldSignal);
}

/**
 * A start-up step that needs the service a setting points at: when it fails, the message names
 * the setting to check (`cannot reach CLICKHOUSE_URL: connect ECONNREFUSED ...`).
 */
export async function reaching<T>(setting: string, step: Promise<T>): Promise<T> {
  try {
    return await step;
  } catch (error) {
    throw new Error(`cannot reach ${setting}: ${(error as Error)?.message ?? String(error)}`, {
      cause: error,
    });
  }
}

/** A start-up step that must answer within `ms` (a broker or a port that accepts and never replies). */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
