import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/processes.js';
import { freeTcpPort } from '../helpers/redis-server.js';

const run = promisify(execFile);
const COMPOSE_FILE = path.join(PROJECT_ROOT, 'deploy/compose.yaml');
const NGINX_CONF = path.join(PROJECT_ROOT, 'deploy/nginx/nginx.conf');

interface ComposeService {
  command?: string[];
  deploy?: { replicas?: number };
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
}

describe('deploy/compose.yaml', () => {
  let services: Record<string, ComposeService>;

  beforeAll(async () => {
    // Debian's docker-compose (1.29) validates and resolves the file without a Docker engine; it
    // prints YAML, turned into JSON by the PyYAML it runs on.
    const { stdout } = await run('sh', [
      '-c',
      `docker-compose -f '${COMPOSE_FILE}' config | python3 -c 'import sys, json, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)'`,
    ]);
    services = JSON.parse(stdout).services;
  });

  it('runs the stores, the one-shot jobs, every service with replicas, and the proxy', () => {
    for (const name of [
      'postgres',
      'redis',
      'kafka',
      'clickhouse',
      'migrate',
      'kafka-topics',
      'clickhouse-schema',
      'api',
      'ingest',
      'sinks',
      'dispatcher',
      'nginx',
    ]) {
      expect(services, name).toHaveProperty(name);
    }
    expect(services.ingest?.deploy?.replicas).toBeGreaterThanOrEqual(2);
    expect(services.dispatcher?.deploy?.replicas).toBeGreaterThanOrEqual(2);
    expect(services.api?.depends_on).toMatchObject({
      migrate: { condition: 'service_completed_successfully' },
      'kafka-topics': { condition: 'service_completed_successfully' },
      'clickhouse-schema': { condition: 'service_completed_successfully' },
    });
  });

  it('starts each process from a compiled entry point that exists in the sources', () => {
    for (const [name, service] of Object.entries(services)) {
      const entry = service.command?.find((part) => part.startsWith('dist/'));
      if (!entry) continue;
      const source = entry.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      expect(existsSync(path.join(PROJECT_ROOT, source)), `${name}: ${source}`).toBe(true);
    }
  });

  it('runs each service with the Node flags of its start script (the image gives the common ones)', async () => {
    const { scripts } = JSON.parse(await readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const dockerfile = await readFile(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
    const imageFlags = /NODE_OPTIONS=(\S+)/.exec(dockerfile)?.[1]?.split(',') ?? [];
    expect(imageFlags.length).toBeGreaterThan(0);
    let compared = 0;
    for (const [name, service] of Object.entries(services)) {
      const at = service.command?.findIndex((part) => part.startsWith('dist/services/')) ?? -1;
      if (at < 0) continue;
      const source = service.command![at]!.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      const script = Object.values(scripts).find((text) => text.endsWith(` ${source}`));
      expect(script, `${name}: a start script for ${source}`).toBeDefined();
      const words = script!.split(' ');
      const scriptFlags = words.slice(words.indexOf('node') + 1, words.indexOf('--import'));
      const commandFlags = service.command!.slice(1, at);
      // Command-line flags come after NODE_OPTIONS, so they win.
      expect(commandFlags.length ? commandFlags : imageFlags, name).toEqual(scriptFlags);
      compared++;
    }
    expect(compared).toBeGreaterThanOrEqual(4);
  });

  it('configures every process from the environment, with the distributed URLs set', () => {
    for (const name of ['api', 'ingest', 'sinks', 'dispatcher']) {
      const env = services[name]?.environment ?? {};
      for (const variable of ['DATABASE_URL', 'REDIS_URL', 'KAFKA_BROKERS', 'CLICKHOUSE_URL', 'APP_ENV']) {
        expect(env[variable], `${name} ${variable}`).toBeTruthy();
      }
    }
  });
});

describe('deploy/nginx/nginx.conf', () => {
  const upstreams: Server[] = [];
  let nginx: ReturnType<typeof spawn> | undefined;
  let directory: string;
  let port: number;

  const upstream = (name: string) =>
    new Promise<number>((resolve) => {
      const server = createServer((request, response) => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ served_by: name, path: request.url }));
      });
      upstreams.push(server);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });

  beforeAll(async () => {
    const [apiPort, ingestPort] = [await upstream('api'), await upstream('ingest')];
    port = await freeTcpPort();
    directory = await mkdtemp(path.join(tmpdir(), 'nginx-'));
    // The deployed file, with the container names pointed at local stand-ins.
    const conf = (await readFile(NGINX_CONF, 'utf8'))
      .replace('http://api:8080', `http://127.0.0.1:${apiPort}`)
      .replace('http://ingest:8081', `http://127.0.0.1:${ingestPort}`)
      .replace('listen 80;', `listen 127.0.0.1:${port};`)
      .replace('pid /tmp/nginx.pid;', `pid ${directory}/nginx.pid;`)
      .replace('worker_processes auto;', 'worker_processes 1;')
      .replace('/var/log/nginx/error.log', `${directory}/error.log`);
    await writeFile(path.join(directory, 'nginx.conf'), conf);
    const check = await run('nginx', ['-t', '-p', directory, '-c', path.join(directory, 'nginx.conf')]).catch(
      (e) => e,
    );
    expect(check.stderr ?? String(check)).toContain('test is successful');
    nginx = spawn('nginx', ['-p', directory, '-c', path.join(directory, 'nginx.conf'), '-g', 'daemon off;'], {
      stdio: 'ignore',
    });
    for (
      let tries = 0;
      !(await fetch(`http://127.0.0.1:${port}/nginx-health`).then(
        (r) => r.ok,
        () => false,
      ));
      tries++
    ) {
      if (tries > 100) throw new Error('nginx did not start');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  afterAll(async () => {
    nginx?.kill('SIGQUIT');
    for (const server of upstreams) server.close();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('sends usage routes to ingest and every other route to api, paths unchanged', async () => {
    const served = async (url: string, init?: RequestInit) =>
      (await fetch(`http://127.0.0.1:${port}${url}`, init)).json();
    expect(await served('/api/public/v1/usage/events', { method: 'POST', body: '{}' })).toEqual({
      served_by: 'ingest',
      path: '/api/public/v1/usage/events',
    });
    expect(await served('/api/public/v1/usage/events/batch?x=1', { method: 'POST', body: '{}' })).toEqual({
      served_by: 'ingest',
      path: '/api/public/v1/usage/events/batch?x=1',
    });
    expect(await served('/api/public/v1/customers?limit=5')).toEqual({
      served_by: 'api',
      path: '/api/public/v1/customers?limit=5',
    });
  });

  it('sends a usage request whose Idempotency-Key is not printable ASCII to api, which refuses it', async () => {
    // uWS would trim the bytes of "é" off the end and record the event under another key
    const servedBy = (key: Buffer) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        const head = `POST /api/public/v1/usage/events HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\nIdempotency-Key: `;
        socket.write(Buffer.concat([Buffer.from(head), key, Buffer.from('\r\n\r\n')]));
        const chunks: Buffer[] = [];
        socket.on('data', (chunk) => chunks.push(chunk));
        socket.on('error', reject);
        socket.on('end', () =>
          resolve(/"served_by":"(\w+)"/.exec(Buffer.concat(chunks).toString())?.[1] ?? ''),
        );
      });
    expect(await servedBy(Buffer.from('order-1'))).toBe('ingest');
    expect(await servedBy(Buffer.from('order-1é'))).toBe('api');
    expect(await servedBy(Buffer.from('éorder-1'))).toBe('api');
    expect(await servedBy(Buffer.from('order\t1'))).toBe('api');
  });

  it('keeps health and metrics off the public entry point', async () => {
    for (const route of ['/metrics', '/readyz', '/healthz']) {
      expect((await fetch(`http://127.0.0.1:${port}${route}`)).status, route).toBe(404);
    }
  });
});
