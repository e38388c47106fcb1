/**
 * What the benchmarks under bench/ share: settings from BENCH_* env vars, a database of the run in
 * the admin Postgres (DATABASE_URL), autocannon with the types it does not ship, project processes
 * started from here and awaited, and the printed tables and JSON report under bench/results/.
 * Requests are handed to autocannon as prebuilt bytes through bench/autocannon-adapter.ts.
 * Bench only: nothing in libs/, services/ or test/ imports this.
 */
import { type ChildProcess, execFileSync, type StdioOptions, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { openClickHouse } from '../libs/clickhouse/index.js';
import type { Admin as KafkaAdmin } from '../libs/kafka/index.js';
import { type PrebuiltRequestEntry, prebuiltRequest } from './autocannon-adapter.js';

export const ROOT = path.resolve(import.meta.dirname, '..');

// --- settings -------------------------------------------------------------------------------

/** An integer env var of at least `min`; unset or empty means `fallback`. */
export function intEnv(name: string, fallback: number, min = 0): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < min) throw new Error(`${name} must be an integer >= ${min}`);
  return parsed;
}

/** The scenarios BENCH_SCENARIOS names (a comma list; default all), in the order given. */
export function scenariosEnv<T extends string>(all: readonly T[]): T[] {
  return (process.env.BENCH_SCENARIOS ?? all.join(','))
    .split(',')
    .map((name) => name.trim())
    .filter((name): name is T => (all as readonly string[]).includes(name));
}

export function logger(benchmark: string): (message: string) => void {
  return (message) => process.stderr.write(`[bench:${benchmark}] ${message}\n`);
}

// --- the run's database ---------------------------------------------------------------------

/** The Postgres each benchmark creates its own database in: an admin URL, never written to the report. */
const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Creates the database `name` next to the admin database and returns its URL. */
export async function createDatabase(name: string): Promise<string> {
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops the database `name` (its connections too); a failure is logged, since this runs in clean-up. */
export async function dropDatabase(name: string, log: (message: string) => void): Promise<void> {
  await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch((error) =>
    log(`could not drop database ${name}: ${(error as Error).message}`),
  );
}

// --- autocannon -----------------------------------------------------------------------------

export interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  /** Requests per second across all connections (0: as fast as the server answers). */
  overallRate?: number;
  /** Stop after this many requests, before `duration` is up. */
  amount?: number;
  method?: string;
  body?: string;
  headers?: Record<string, string>;
  requests?: AutocannonRequestEntry[];
}

export interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p90: number; p97_5: number; p99: number; max: number };
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Seconds the run lasted. */
  duration: number;
}

const requireFromHere = createRequire(import.meta.url);

/** The part of autocannon's API the benchmarks use (the package ships no types). */
export const autocannon = requireFromHere('autocannon') as (
  options: AutocannonOptions,
) => Promise<AutocannonResult> & {
  /** Each response as it arrives: its status and latency (ms, from when its request was written). */
  on(
    event: 'response',
    listener: (client: unknown, statusCode: number, bytes: number, latencyMs: number) => void,
  ): unknown;
};

/**
 * The bytes of one HTTP/1.1 request as autocannon would build them (keep-alive, Content-Length),
 * built once: autocannon's own per-request building would cost it more CPU than the sending
 * (bench/autocannon-adapter.ts).
 */
export function requestBytes(
  url: string,
  request: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Buffer {
  const { host, pathname, search } = new URL(url);
  const body = Buffer.from(request.body ?? '');
  const head = [
    `${request.method ?? 'GET'} ${pathname}${search} HTTP/1.1`,
    `Host: ${host}`,
    'Connection: keep-alive',
    ...Object.entries(request.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
    ...(body.length > 0 ? [`Content-Length: ${body.length}`] : []),
  ].join('\r\n');
  return Buffer.concat([Buffer.from(`${head}\r\n\r\n`), body]);
}

/** A request picking one of `variants` (e.g. paths of random customers) at random, sent as built. */
export function randomRequest(variants: Buffer[]): AutocannonRequestEntry {
  return prebuiltRequest(() => variants[Math.floor(Math.random() * variants.length)]!);
}

/** Where a request template takes its fresh key: replaced by a zero-padded counter of the same width. */
export const KEY_SLOT = '#'.repeat(12);

/**
 * A request with a fresh key each time: every KEY_SLOT of the template (header, body or both)
 * gets the next number, at the cost of copying a buffer. `templates` are cycled through
 * (e.g. one per subscription item); `keyPrefix` keeps keys unique across scenarios.
 */
export function freshKeyRequest(
  url: string,
  keyPrefix: string,
  templates: { method: string; headers: Record<string, string>; body: string }[],
): AutocannonRequestEntry {
  const withPrefix = (text: string) => text.replaceAll(KEY_SLOT, keyPrefix + KEY_SLOT);
  const built = templates.map((template) => {
    const bytes = requestBytes(url, {
      method: template.method,
      headers: Object.fromEntries(Object.entries(template.headers).map(([k, v]) => [k, withPrefix(v)])),
      body: withPrefix(template.body),
    });
    const slots: number[] = [];
    for (let at = bytes.indexOf(KEY_SLOT); at !== -1; at = bytes.indexOf(KEY_SLOT, at + KEY_SLOT.length)) {
      slots.push(at);
    }
    if (slots.length === 0) throw new Error('a fresh-key template needs at least one KEY_SLOT');
    return { bytes, slots };
  });
  let sequence = 0;
  return prebuiltRequest(() => {
    const template = built[sequence % built.length]!;
    const buffer = Buffer.from(template.bytes);
    for (const slot of template.slots) {
      buffer.write(String(++sequence).padStart(KEY_SLOT.length, '0'), slot, 'latin1');
    }
    return buffer;
  });
}

/** An entry of autocannon's `requests`: prebuilt bytes (randomRequest, freshKeyRequest). */
export type AutocannonRequestEntry = PrebuiltRequestEntry;

// --- processes ------------------------------------------------------------------------------

const children: ChildProcess[] = [];

/**
 * The V8 flags a process runs with here: its package.json start script's (`exec node <flags>
 * --import tsx <entry>`), so a service is measured as `npm run start:*` runs it; any other entry
 * (baselines, the console) gets the flags of `npm start`. They size the young generation, where the
 * many short-lived objects of each request die (docs/decisions.md).
 */
export function serviceNodeFlags(entry: string): string[] {
  const { scripts } = requireFromHere(path.join(ROOT, 'package.json')) as { scripts: Record<string, string> };
  const flagsOf = (script: string | undefined) => {
    const words = script?.split(/\s+/) ?? [];
    const node = words.indexOf('node');
    const end = words.indexOf('--import');
    return node >= 0 && end > node ? words.slice(node + 1, end) : undefined;
  };
  const own = Object.values(scripts).find((script) => script.split(/\s+/).includes(entry));
  const flags = flagsOf(own) ?? flagsOf(scripts.start);
  if (!flags) throw new Error(`package.json gives no node flags for ${entry}`);
  return flags;
}

/**
 * BENCH_SERVICES_FROM: `dist` (default) runs the services as the Docker image does, compiled by
 * `npm run build`; `source` runs their TypeScript through tsx, as `npm run start:*` does. They
 * differ on the hot path: tsx compiles with esbuild's keepNames, which wraps every named closure in
 * a `__name()` call that redefines the function's `name` each time the closure is created (see
 * bench/README.md).
 */
function servicesFrom(): 'dist' | 'source' {
  const value = process.env.BENCH_SERVICES_FROM ?? 'dist';
  if (value !== 'dist' && value !== 'source') throw new Error('BENCH_SERVICES_FROM must be dist or source');
  return value;
}

let built = false;

/** `npm run build` once per benchmark run, before the first service starts from dist/. */
function buildOnce(): void {
  if (built) return;
  process.stderr.write('[bench] npm run build: the services run from dist/, as in the Docker image\n');
  execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  built = true;
}

/**
 * Starts a project entry point with serviceNodeFlags(entry): ONE process, whose CPU time and
 * signals are its own (the tsx CLI would run it in a child). A service (`services/...`) runs from
 * its build in dist/ (see servicesFrom), anything else as `node --import tsx <entry>`.
 * `lowPriority` runs it under `nice -n 19`. stopChildren() ends whatever is still running.
 */
export function spawnEntry(
  entry: string,
  options: {
    args?: string[];
    env?: Record<string, string | undefined>;
    nodeArgs?: string[];
    stdio?: StdioOptions;
    lowPriority?: boolean;
  } = {},
): ChildProcess {
  const compiled = entry.startsWith('services/') && servicesFrom() === 'dist';
  if (compiled) buildOnce();
  const command = [
    ...serviceNodeFlags(entry),
    ...(options.nodeArgs ?? []),
    ...(compiled
      ? [path.join(ROOT, 'dist', entry.replace(/\.ts$/, '.js'))]
      : ['--import', 'tsx', path.join(ROOT, entry)]),
    ...(options.args ?? []),
  ];
  return track(
    spawn(
      options.lowPriority ? 'nice' : process.execPath,
      options.lowPriority ? ['-n', '19', process.execPath, ...command] : command,
      {
        cwd: ROOT,
        // an env value left undefined is not passed on
        env: { ...process.env, ...options.env },
        // a child whose output nobody reads must not write into a pipe that fills up
        stdio: options.stdio ?? ['ignore', 'inherit', 'inherit'],
      },
    ),
  );
}

/** Adds a process started elsewhere to those stopChildren() ends. */
export function track(child: ChildProcess): ChildProcess {
  children.push(child);
  return child;
}

/**
 * Ends every started process still running and waits until they are gone (the benchmark's last
 * step, whatever failed, before its database is dropped): SIGTERM, or SIGKILL at once.
 */
export async function stopChildren(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
  await Promise.all(
    children.map((child) => (signal === 'SIGKILL' ? stopProcess(child, 0) : stopProcess(child))),
  );
}

/** SIGTERM (SIGKILL with `graceMs` 0), then SIGKILL if still there after `graceMs`; resolves once it is gone. */
export async function stopProcess(child: ChildProcess, graceMs = 20_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
  const timer = graceMs > 0 ? setTimeout(() => child.kill('SIGKILL'), graceMs) : undefined;
  await exited;
  clearTimeout(timer);
}

/**
 * Resolves with the first line of the child's stdout (a pipe) that `matches`, then leaves its
 * stdout flowing so that a full pipe never blocks it; rejects if the output ends first.
 */
export function waitForLine(
  child: ChildProcess,
  matches: (line: string) => boolean = () => true,
): Promise<string> {
  const next = lineReader(child);
  return (async () => {
    for (;;) {
      const line = await next();
      if (matches(line)) {
        next.close();
        return line;
      }
    }
  })();
}

/**
 * The child's stdout (a pipe) line by line: each call resolves with the next line, and rejects
 * once the output ended (the process exited) with the last lines it printed.
 */
export function lineReader(child: ChildProcess): (() => Promise<string>) & { close(): void } {
  const lines = createInterface({ input: child.stdout! });
  const buffered: string[] = [];
  const recent: string[] = [];
  const waiting: { resolve: (line: string) => void; reject: (error: Error) => void }[] = [];
  let ended = false;
  const endError = () =>
    new Error(`${child.spawnargs.join(' ')} ended its output:\n${recent.join('\n')}`.trimEnd());
  lines.on('line', (line) => {
    recent.push(line);
    if (recent.length > 20) recent.shift();
    const waiter = waiting.shift();
    if (waiter) waiter.resolve(line);
    else buffered.push(line);
  });
  lines.once('close', () => {
    ended = true;
    for (const waiter of waiting.splice(0)) waiter.reject(endError());
  });
  const next = () => {
    const line = buffered.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (ended) return Promise.reject(endError());
    return new Promise<string>((resolve, reject) => waiting.push({ resolve, reject }));
  };
  return Object.assign(next, {
    /** Stops reading lines; the output keeps flowing (and is dropped). */
    close() {
      lines.removeAllListeners('line');
      child.stdout!.resume();
    },
  });
}

/** Polls `url` until it answers 2xx; fails at once if `child` exits, or after `timeoutMs`. */
export async function waitUntilReady(url: string, child?: ChildProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      throw new Error(`${child.spawnargs.join(' ')} exited (${child.exitCode ?? child.signalCode})`);
    }
    if (Date.now() > deadline) throw new Error(`${url} not ready after ${timeoutMs / 1000} s`);
    const ready = await fetch(url).then(
      (response) => response.ok,
      () => false, // not listening yet
    );
    if (ready) return;
    await sleep(100);
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The run's Node flags for a process it starts, after those of its package.json script:
 * BENCH_PROFILE_DIR (it writes a V8 CPU profile there when it exits), BENCH_SERVICE_NODE_FLAGS
 * (every service: `--trace-gc-nvp`) and, for the api alone, BENCH_API_NODE_FLAGS.
 */
export function benchNodeFlags(entry: string): string[] {
  const words = (name: string) => (process.env[name] ?? '').split(' ').filter(Boolean);
  const profileDir = process.env.BENCH_PROFILE_DIR;
  return [
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir)}`] : []),
    ...words('BENCH_SERVICE_NODE_FLAGS'),
    ...(entry === 'services/api/main.ts' ? words('BENCH_API_NODE_FLAGS') : []),
  ];
}

/**
 * The api service (services/api/main.ts) as one process in production mode on a free port, over
 * `database` and a Redis key prefix of the run's own, ready once /readyz answers; problems only in
 * its output, with the run's flags (benchNodeFlags).
 */
export async function startApiProcess(options: {
  databaseUrl: string;
  poolSize: number;
  redisUrl: string;
  redisPrefix: string;
}): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const entry = 'services/api/main.ts';
  const child = spawnEntry(entry, {
    nodeArgs: benchNodeFlags(entry),
    env: {
      DATABASE_URL: options.databaseUrl,
      DATABASE_POOL_SIZE: String(options.poolSize),
      REDIS_URL: options.redisUrl,
      REDIS_KEY_PREFIX: options.redisPrefix,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      APP_ENV: 'production',
    },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitUntilReady(`${base}/readyz`, child);
  return { child, base };
}

/**
 * A project entry point as ONE process (spawnEntry), its output written to
 * bench/results/<logName>-<entry>.log (LOG_LEVEL=warn: problems only), ready once
 * http://127.0.0.1:<port>/healthz answers, or (`readyWhen: 'port-line'`, the bare routes) once it
 * printed its port; with the run's flags (benchNodeFlags).
 */
export async function startLoggedProcess(
  entry: string,
  options: {
    env: Record<string, string | undefined>;
    port: number;
    logName: string;
    readyWhen?: 'healthz' | 'port-line';
    lowPriority?: boolean;
  },
): Promise<ChildProcess> {
  const child = spawnEntry(entry, {
    env: options.env,
    nodeArgs: benchNodeFlags(entry),
    lowPriority: options.lowPriority,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logFile = path.join(ROOT, 'bench/results', `${options.logName}-${path.basename(entry, '.ts')}.log`);
  await mkdir(path.dirname(logFile), { recursive: true });
  const processLog = createWriteStream(logFile, { flags: 'a' });
  child.stdout!.on('data', (data) => processLog.write(data));
  child.stderr!.on('data', (data) => processLog.write(data));
  try {
    if (options.readyWhen === 'port-line') await waitForLine(child, (line) => line.includes('"port"'));
    else await waitUntilReady(`http://127.0.0.1:${options.port}/healthz`, child);
  } catch (error) {
    throw new Error(
      `${entry} did not start (see ${path.relative(ROOT, logFile)}): ${(error as Error).message}`,
    );
  }
  return child;
}

/** A redis-server of the run on a free port, without persistence: its keys leave with it. */
export async function startRedisServer(): Promise<{ url: string; pid: number | undefined }> {
  const port = await freePort();
  const child = track(
    spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    ),
  );
  await waitForLine(child, (line) => line.includes('Ready to accept connections'));
  return { url: `redis://127.0.0.1:${port}`, pid: child.pid };
}

/**
 * A Kafka test broker of the run (librdkafka's mock cluster, built by `npm test`, see
 * deploy/dev-services), which creates topics when asked; started here rather than through the test
 * helper so that its CPU time can be read.
 */
export async function startKafkaTestBrokerProcess(): Promise<{
  bootstrap: string;
  pid: number | undefined;
  createTopic(topic: string, partitions: number): Promise<void>;
}> {
  const binary = path.join(ROOT, '.cache/kafka-test-broker');
  const child = track(spawn(binary, ['1'], { stdio: ['pipe', 'pipe', 'inherit'] }));
  const next = lineReader(child);
  const nextLine = () =>
    next().catch(() => {
      throw new Error('the Kafka test broker exited; run `npm test` once to build it');
    });
  const bootstrap = /^BOOTSTRAP (\S+)/.exec(await nextLine())?.[1];
  if (!bootstrap) throw new Error('unexpected output from the Kafka test broker');
  return {
    bootstrap,
    pid: child.pid,
    async createTopic(topic, partitions) {
      child.stdin!.write(`topic ${topic} ${partitions}\n`);
      const answer = await nextLine();
      if (answer !== 'OK') throw new Error(`Kafka test broker: ${answer}`);
    },
  };
}

// --- the usage pipeline's progress ------------------------------------------------------------

/** The ingest service's own counts of events accepted as new and as repeats, from its /metrics. */
export async function ingestCounters(
  port: number,
): Promise<{ accepted: number; deduplicated: number; produceCalls: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const value = (outcome: string) =>
    Number(
      new RegExp(`billing_ingest_events_total\\{outcome="${outcome}",reason=""\\} (\\d+)`).exec(text)?.[1] ??
        0,
    );
  const produceCalls = Number(/billing_kafka_produce_batch_size_count (\d+)/.exec(text)?.[1] ?? 0);
  return { accepted: value('accepted'), deduplicated: value('deduplicated'), produceCalls };
}

/**
 * Waits until the ingest service's counters stand still (requests a load gave up on may still be
 * completing) and every one of `groupIds` has committed the topic up to its end. Resolves false
 * after `timeoutMs`.
 */
export async function consumerGroupsCaughtUp(options: {
  admin: KafkaAdmin;
  topic: string;
  groupIds: readonly string[];
  ingestPort: number;
  timeoutMs: number;
  log: (message: string) => void;
}): Promise<boolean> {
  const { admin, topic, groupIds, ingestPort, log } = options;
  const deadline = Date.now() + options.timeoutMs;
  let last = await ingestCounters(ingestPort);
  for (;;) {
    await sleep(200);
    const now = await ingestCounters(ingestPort);
    if (now.accepted === last.accepted && now.deduplicated === last.deduplicated) break;
    last = now;
  }
  let lastLog = Date.now();
  for (;;) {
    const ends = await admin.fetchTopicOffsets(topic);
    let behind = 0;
    for (const groupId of groupIds) {
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const at = new Map((committed?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
      for (const end of ends) {
        const high = Number(end.high);
        if (high > Number(end.low)) behind += Math.max(0, high - Math.max(0, at.get(end.partition) ?? 0));
      }
    }
    if (behind === 0) return true;
    if (Date.now() > deadline) {
      log(
        `${groupIds.join(', ')} did not catch up within ${options.timeoutMs / 1000} s (${behind} messages behind)`,
      );
      return false;
    }
    if (Date.now() - lastLog > 10_000) {
      log(`  ${behind} messages behind`);
      lastLog = Date.now();
    }
    await sleep(100);
  }
}

// --- CPU time -------------------------------------------------------------------------------

/** CPU seconds a process used so far (user + system), from /proc; 0 where /proc is missing. */
export async function cpuSeconds(pid: number | undefined): Promise<number> {
  if (!pid) return 0;
  try {
    return statCpuSeconds(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return 0;
  }
}

/**
 * Waits until the machine is quiet: less than `maxBusy` of its CPU time used over a 2 s sample
 * (/proc/stat), at most `timeoutMs`. A scenario that starts while ClickHouse still merges the
 * previous one's rows, or Postgres vacuums them, is measured against that work. Returns the busy
 * fraction of the last sample, so the report can show what the scenario started on.
 */
export async function waitForQuietMachine(maxBusy = 0.1, timeoutMs = 180_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const before = await machineTicks();
    await sleep(2000);
    const after = await machineTicks();
    const total = after.total - before.total;
    const busy = total > 0 ? 1 - (after.idle - before.idle) / total : 0;
    if (busy < maxBusy || Date.now() >= deadline) return busy;
  }
}

/** All CPUs' clock ticks since boot, and the idle ones among them (the first line of /proc/stat). */
async function machineTicks(): Promise<{ total: number; idle: number }> {
  const [cpu] = (await readFile('/proc/stat', 'utf8')).split('\n');
  const ticks = cpu!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user and nice)
  return { total: ticks.slice(0, 8).reduce((sum, n) => sum + n, 0), idle: ticks[3]! + ticks[4]! };
}

/** utime and stime of a /proc/<pid>/stat line, in clock ticks of 1/100 s (USER_HZ on Linux). */
function statCpuSeconds(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * CPU seconds used so far by every process whose command name starts with `command` (e.g. all
 * of Postgres's backends): what a server outside the benchmark's own children costs.
 */
export async function commandCpuSeconds(command: string): Promise<number> {
  let total = 0;
  const pids = await readdir('/proc').catch(() => [] as string[]);
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (name.startsWith(command)) total += statCpuSeconds(stat);
  }
  return total;
}

/** Postgres' own processes, which serve every database of the cluster. */
const POSTGRES_AUXILIARY =
  /: (checkpointer|background writer|walwriter|autovacuum launcher|logical replication launcher|archiver|stats collector)\s*$/;

/**
 * CPU seconds used so far by the Postgres processes that work for `database`: its backends and
 * autovacuum workers (their titles name it), plus the cluster's own processes (postmaster,
 * checkpointer, WAL writer...), which serve every database. Backends of other databases (other
 * engineers' tests on a shared machine) are left out; a backend that exited takes its time with it.
 */
export async function postgresCpuSeconds(database: string): Promise<number> {
  let total = 0;
  const pids = await readdir('/proc').catch(() => [] as string[]);
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    if (!stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).startsWith('postgres')) continue;
    const title = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''))
      .replaceAll('\0', ' ')
      .trim();
    const ours =
      title.split(' ').includes(database) || POSTGRES_AUXILIARY.test(title) || !title.includes(': ');
    if (ours) total += statCpuSeconds(stat);
  }
  return total;
}

/** CPU seconds so far of the server under test, all of Postgres, all of Redis and this process. */
export interface CpuSnapshot {
  server: number;
  postgres: number;
  redis: number;
  autocannon: number;
}

export async function cpuSnapshot(serverPid: number | undefined): Promise<CpuSnapshot> {
  const self = process.cpuUsage();
  return {
    server: await cpuSeconds(serverPid),
    postgres: await commandCpuSeconds('postgres'),
    redis: await commandCpuSeconds('redis-server'),
    autocannon: (self.user + self.system) / 1e6,
  };
}

/** CPU time per request between two snapshots, in whole microseconds, by process. */
export function cpuMicrosPerRequest(before: CpuSnapshot, after: CpuSnapshot, requests: number): CpuSnapshot {
  const micros = (key: keyof CpuSnapshot) =>
    Math.round(((after[key] - before[key]) * 1e6) / Math.max(1, requests));
  return {
    server: micros('server'),
    postgres: micros('postgres'),
    redis: micros('redis'),
    autocannon: micros('autocannon'),
  };
}

// --- output ---------------------------------------------------------------------------------

/** A plain text table: numbers right-aligned, the rest left-aligned. */
/** Drops a benchmark's ClickHouse database; a failure is logged, never thrown (cleanup runs last). */
export async function dropClickHouseDatabase(
  url: string,
  name: string,
  log: (message: string) => void,
): Promise<void> {
  const clickhouse = openClickHouse({ url, database: name });
  await clickhouse
    .command(`DROP DATABASE IF EXISTS ${name}`)
    .catch((error) => log(`cleanup: ${(error as Error).message}`));
  await clickhouse.close();
}

/** p50, p99 and max of `values` (nearest rank). */
export function percentiles(values: readonly number[]): { p50: number; p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1]! };
}

/**
 * The share a variant keeps of its baseline, from runs made in back-to-back pairs (each round runs
 * both, in alternating order): each round's own ratio, then their median. A pair shares the
 * machine's phase; the mean over rounds does not, and one run in a slow phase of the VM (which
 * swings its speed by 2x from one minute to the next) moves a ratio of means by more than the few
 * percent it judges. Both figures are reported.
 */
export function pairedShare(rounds: readonly { variant: number; baseline: number }[]): {
  medianOfRounds: number;
  ofMeans: number;
  byRound: number[];
} {
  const byRound = rounds.map((r) => r.variant / r.baseline);
  const sorted = [...byRound].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  const medianOfRounds =
    sorted.length % 2 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  const ofMeans = mean(rounds.map((r) => r.variant)) / mean(rounds.map((r) => r.baseline));
  return { medianOfRounds, ofMeans, byRound };
}

/** One second of a load: requests answered in it (by when they were due or sent) and their latencies. */
export interface SecondOfLoad {
  second: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/**
 * Latencies by the second of the run they fall in, to tell a tail spread evenly over a run from
 * one made by a few bad seconds (periodic work elsewhere on the box, a GC).
 */
export class LatencyTimeline {
  private readonly seconds: number[][] = [];

  /** A request sent (or due) `atMs` after the run began, answered after `latencyMs`. */
  add(atMs: number, latencyMs: number): void {
    const second = Math.max(0, Math.floor(atMs / 1000));
    for (let s = this.seconds.length; s <= second; s++) this.seconds.push([]);
    this.seconds[second]!.push(latencyMs);
  }

  summary(): SecondOfLoad[] {
    const round = (value: number) => Math.round(value * 100) / 100;
    return this.seconds.map((latencies, second) => {
      if (!latencies.length) return { second, requests: 0, p50Ms: 0, p99Ms: 0, maxMs: 0 };
      const { p50, p99, max } = percentiles(latencies);
      return { second, requests: latencies.length, p50Ms: round(p50), p99Ms: round(p99), maxMs: round(max) };
    });
  }
}

/** "p99 ms by second: 2.1 2.3 14.5 ...; max: ..." of a timeline, for the log. */
export function timelineLine(timeline: readonly SecondOfLoad[]): string {
  return `p99 ms by second: ${timeline.map((s) => s.p99Ms.toFixed(1)).join(' ')}; max: ${timeline.map((s) => s.maxMs.toFixed(0)).join(' ')}`;
}

export function printTable(header: string[], rows: (string | number)[][]): void {
  const cells = rows.map((row) => row.map(String));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const numeric = header.map(
    (_, i) => cells.length > 0 && cells.every((row) => /^[-\d.,]+( ?%|x)?$/.test(row[i]!)),
  );
  const line = (row: string[]) =>
    row.map((cell, i) => (numeric[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const row of cells) console.log(line(row));
}

/** The bars and what this run measured; `pass` null or undefined where it cannot be judged. */
export function printBars(bars: { bar: string; measured: string; pass: boolean | null | undefined }[]): void {
  console.log('');
  printTable(
    ['bar', 'measured', 'result'],
    bars.map((b) => [b.bar, b.measured, b.pass === true ? 'PASS' : b.pass === false ? 'FAIL' : 'n/a']),
  );
}

/** Writes bench/results/<benchmark>-<time>.json (with the machine it ran on) and returns its path. */
export async function writeReport(benchmark: string, report: object): Promise<string> {
  const at = new Date().toISOString();
  const file = path.join(ROOT, 'bench/results', `${benchmark}-${at.replace(/[:.]/g, '-')}.json`);
  await mkdir(path.dirname(file), { recursive: true });
  const machine = {
    node: process.version,
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    loadAverage: os.loadavg(),
  };
  await writeFile(file, `${JSON.stringify({ benchmark, at, machine, ...report }, null, 2)}\n`);
  return path.relative(ROOT, file);
}
