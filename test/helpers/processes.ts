import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

export const PROJECT_ROOT = path.resolve(import.meta.dirname, '../..');
const TSX = path.join(PROJECT_ROOT, 'node_modules/.bin/tsx');

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a TypeScript entry point of the project (as `npm run` would) to completion. */
export function runTs(
  entry: string,
  args: string[],
  env: Record<string, string | undefined>,
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, [path.join(PROJECT_ROOT, entry), ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts a long-running entry point and resolves once its stdout matches `ready`. */
export async function startTs(
  entry: string,
  env: Record<string, string | undefined>,
  ready: RegExp,
  timeoutMs = 60_000,
): Promise<{
  child: ChildProcess;
  output: () => string;
  match: RegExpMatchArray;
  stop(): Promise<number | null>;
}> {
  const child = spawn(TSX, [path.join(PROJECT_ROOT, entry)], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${entry} not ready after ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
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
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${entry} exited with ${code}:\n${output}`));
    });
  });
  return {
    child,
    output: () => output,
    match,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.removeAllListeners('exit');
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}

export function freePort(): number {
  return 20_000 + Math.floor(Math.random() * 30_000);
}
