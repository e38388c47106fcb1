import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

export const PROJECT_ROOT = path.resolve(import.meta.dirname, '../..');

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a TypeScript entry point of the project (as `npm run` would) to completion, or kills it
 * after `timeoutMs` (code null) when given.
 */
export function runTs(
  entry: string,
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs?: number,
): Promise<ProcessResult> {
  return runCommand(
    process.execPath,
    ['--import', 'tsx', path.join(PROJECT_ROOT, entry), ...args],
    env,
    timeoutMs,
  );
}

/**
 * Runs `command` in the project's directory to completion, or kills it after `timeoutMs` (code
 * null) when given.
 */
export function runCommand(
  command: string,
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs?: number,
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  match: RegExpMatchArray;
  /** SIGTERM; resolves with the exit code once the process is gone. */
  stop(): Promise<number | null>;
  /** SIGKILL, as a crash would; resolves once the process is gone. */
  kill(): Promise<void>;
}

/**
 * Starts a long-running entry point as `node --import tsx <entry>` (ONE process, so a signal
 * reaches the service itself: the tsx CLI would run it in a child that outlives a SIGKILL) and
 * resolves once its output matches `ready`.
 */
export async function startTs(
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
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
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
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    match,
    output: () => output,
    stop() {
      if (running()) child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      if (running()) child.kill('SIGKILL');
      await exited;
    },
  };
}

const PORTS_PER_WORKER = 1_000;
const portBlock = 20_000 + ((Number(process.env.VITEST_POOL_ID ?? 1) - 1) % 12) * PORTS_PER_WORKER;
let portsHandedOut = Math.floor(Math.random() * PORTS_PER_WORKER);

/**
 * A port for a child to listen on, below the kernel's ephemeral range (32768 and up on Linux),
 * where the outgoing connections of the run's own clients never land. Each vitest worker hands out
 * the ports of a block of its own in turn (workers keep their modules from file to file), so no two
 * files running at once, and no two calls in one file, get the same port; the block's starting
 * point is random so that a second run beside this one rarely meets it.
 */
export function freePort(): number {
  return portBlock + (portsHandedOut++ % PORTS_PER_WORKER);
}

/** Whether something accepts connections on 127.0.0.1:`port` now. */
export function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
