import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from './processes.js';
import { freeTcpPort } from './redis-server.js';

export const NGINX_CONF = path.join(PROJECT_ROOT, 'deploy/nginx/nginx.conf');

export interface RunningNginx {
  port: number;
  stop(): Promise<void>;
}

/**
 * Debian's nginx on the deployed deploy/nginx/nginx.conf, with the container names pointed at
 * local ports and everything else as deployed; `nginx -t` must accept the file first.
 */
export async function startNginx(upstreams: { apiPort: number; ingestPort: number }): Promise<RunningNginx> {
  const port = await freeTcpPort();
  const directory = await mkdtemp(path.join(tmpdir(), 'nginx-'));
  const conf = (await readFile(NGINX_CONF, 'utf8'))
    .replace('http://api:8080', `http://127.0.0.1:${upstreams.apiPort}`)
    .replace('http://ingest:8081', `http://127.0.0.1:${upstreams.ingestPort}`)
    .replace('listen 80;', `listen 127.0.0.1:${port};`)
    .replace('pid /tmp/nginx.pid;', `pid ${directory}/nginx.pid;`)
    .replace('worker_processes auto;', 'worker_processes 1;')
    .replace('/var/log/nginx/error.log', `${directory}/error.log`);
  const file = path.join(directory, 'nginx.conf');
  await writeFile(file, conf);
  const check = await promisify(execFile)('nginx', ['-t', '-p', directory, '-c', file]).catch((e) => e);
  if (!String(check.stderr ?? check).includes('test is successful')) {
    throw new Error(`nginx -t refused deploy/nginx/nginx.conf: ${check.stderr ?? check}`);
  }
  const nginx = spawn('nginx', ['-p', directory, '-c', file, '-g', 'daemon off;'], { stdio: 'ignore' });
  const up = () =>
    fetch(`http://127.0.0.1:${port}/nginx-health`).then(
      (r) => r.ok,
      () => false,
    );
  for (let tries = 0; !(await up()); tries++) {
    if (tries > 100) throw new Error('nginx did not start');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    async stop() {
      const exited = new Promise((resolve) => nginx.once('exit', resolve));
      nginx.kill('SIGQUIT');
      await exited;
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * The operations routes as a client might spell them: the services route some of these to the
 * route itself (Fastify takes `/metrics/`, a dot segment or a %-escape), so the proxy must refuse
 * the whole class, not one spelling.
 */
export const OPS_PATH_SPELLINGS = [
  '/metrics',
  '/healthz',
  '/readyz',
  '/metrics/',
  '/healthz/',
  '/readyz/',
  '/METRICS',
  '/Readyz/',
  '//metrics',
  '/./metrics',
  '/metrics/.',
  '/%6Detrics',
  '/%6detrics/',
  '/%2e/readyz',
  '/metrics%2F',
  '/metrics?x=1',
  '/healthz?',
  '/api/../metrics',
  '/api/public/../../readyz',
  '/metrics;x',
];
