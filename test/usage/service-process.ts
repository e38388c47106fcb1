import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../helpers/processes.js';

export interface ServiceProcess {
  child: ChildProcess;
  match: RegExpMatchArray;
  output(): string;
  /** SIGTERM, then the exit code (SIGKILL after `graceMs`, answering null). */
  stop(graceMs?: number): Promise<number | null>;
  /** SIGKILL: a crash, nothing runs after it. */
  kill(): Promise<void>;
}

const running = new Set<ChildProcess>();

/**
 * An entry point as ONE node process (`node --import tsx`), unlike the tsx CLI, which runs the
 * program in a child of its own: a SIGKILL sent here really kills the service, as a crash would.
 */
export async function startService(
  entry: string,
  env: Record<string, string | undefined>,
  ready: RegExp,
  timeoutMs = 60_000,
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, entry)], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  let output = '';
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${entry} not ready after ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (data: Buffer) => {
      output += data;
      const found = output.match(ready);
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${entry} exited with ${code}:\n${output}`));
    });
  });
  return {
    child,
    match,
    output: () => output,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** For afterAll: no service process outlives its test file. */
export async function killServices(): Promise<void> {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
}
