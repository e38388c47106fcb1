import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPS_PATH_SPELLINGS, type RunningNginx, startNginx } from '../helpers/nginx.js';
import { PROJECT_ROOT } from '../helpers/processes.js';

const run = promisify(execFile);
const COMPOSE_FILE = path.join(PROJECT_ROOT, 'deploy/compose.yaml');

interface ComposeService {
  command?: string[];
  ports?: unknown[];
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

  it('runs ingest on uWebSockets.js only behind nginx: its port is not published', () => {
    expect(services.ingest?.environment?.INGEST_TRUSTED_PROXY).toBe('true');
    expect(services.ingest?.ports).toBeUndefined();
    expect(services.nginx?.ports).toBeDefined();
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

describe('package.json', () => {
  it('lists every package the services import at run time as a dependency, the image omitting dev ones', async () => {
    const manifest = JSON.parse(await readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    const { stdout } = await run('git', ['ls-files', 'libs', 'services', 'bin'], { cwd: PROJECT_ROOT });
    const sources = stdout.split('\n').filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'));
    const imported = new Set<string>();
    for (const file of sources) {
      const text = await readFile(path.join(PROJECT_ROOT, file), 'utf8');
      for (const [, specifier] of text.matchAll(/(?:from |import\(|require\()\s*'([^'./][^']*)'/g)) {
        if (specifier!.startsWith('node:')) continue;
        const parts = specifier!.split('/');
        imported.add(specifier!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
      }
    }
    expect(imported.size).toBeGreaterThan(10);
    const missing = [...imported].filter((name) => !(name in manifest.dependencies));
    expect(missing).toEqual([]);
    // only tests, benchmarks and the TypeScript runner of `npm start` use these
    for (const name of ['@modelcontextprotocol/sdk', 'tsx', 'autocannon', 'vitest']) {
      expect(manifest.devDependencies, name).toHaveProperty(name);
    }
    const dockerfile = await readFile(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
  });
});

describe('deploy/nginx/nginx.conf', () => {
  const upstreams: Server[] = [];
  let nginx: RunningNginx | undefined;
  let port: number;

  const upstream = (name: string) =>
    new Promise<number>((resolve) => {
      const server = createServer((request, response) => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ served_by: name, path: request.url, headers: request.rawHeaders }));
      });
      upstreams.push(server);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });

  beforeAll(async () => {
    nginx = await startNginx({ apiPort: await upstream('api'), ingestPort: await upstream('ingest') });
    port = nginx.port;
  });

  afterAll(async () => {
    await nginx?.stop();
    for (const server of upstreams) server.close();
  });

  /** One request written by hand (header bytes as given); what the stand-in upstream saw. */
  const sent = (head: string, extraHeader: Buffer = Buffer.alloc(0), body = '') =>
    new Promise<{ status: number; served_by?: string; path?: string; headers?: string[] }>(
      (resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        socket.write(
          Buffer.concat([
            Buffer.from(`${head}\r\nHost: x\r\nContent-Length: ${body.length}\r\nConnection: close\r\n`),
            extraHeader,
            Buffer.from(`\r\n${body}`),
          ]),
        );
        const chunks: Buffer[] = [];
        socket.on('data', (chunk) => chunks.push(chunk));
        socket.on('error', reject);
        socket.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          const payload = text.slice(text.indexOf('\r\n\r\n') + 4);
          resolve({
            status: Number(text.split(' ')[1]),
            ...(payload.startsWith('{') ? JSON.parse(payload) : {}),
          });
        });
      },
    );
  const header = (name: string, value: string | Buffer) =>
    Buffer.concat([Buffer.from(`${name}: `), Buffer.from(value), Buffer.from('\r\n')]);

  it('sends usage POSTs to ingest and every other request to api, paths unchanged', async () => {
    const served = async (url: string, init?: RequestInit) =>
      (await fetch(`http://127.0.0.1:${port}${url}`, init)).json();
    for (const path of [
      '/api/public/v1/usage/events',
      '/api/public/v1/usage/events/',
      '/api/public/v1/usage/events/batch?x=1',
      '/api/public/v1/usage/events/batch/',
    ]) {
      expect(await served(path, { method: 'POST', body: '{}' })).toMatchObject({ served_by: 'ingest', path });
    }
    for (const [method, path] of [
      ['GET', '/api/public/v1/usage/events'],
      ['GET', '/api/public/v1/usage/events/batch'],
      ['PUT', '/api/public/v1/usage/events'],
      ['POST', '/api/public/v1/usage/events/extra'],
      // the usage read-back and the void are the api's (docs/architecture.md, "The usage read-back")
      ['GET', '/api/public/v1/usage/events?status=VOIDED&limit=5'],
      ['GET', '/api/public/v1/usage/events/3f2c8a4e-1b7d-4c9e-a0f1-2d3e4f5a6b7c'],
      ['POST', '/api/public/v1/usage/events/3f2c8a4e-1b7d-4c9e-a0f1-2d3e4f5a6b7c/void'],
      ['GET', '/api/public/v1/subscriptions/7/usage?period=previous'],
      ['GET', '/api/public/v1/subscriptions/7/usage/daily?from=2026-11-01&to=2026-11-30'],
      ['GET', '/api/public/v1/subscriptions/7/upcoming-invoice'],
      ['GET', '/api/public/v1/customers?limit=5'],
    ] as const) {
      const body = method === 'GET' ? undefined : '{}';
      expect(await served(path, { method, body }), `${method} ${path}`).toMatchObject({
        served_by: 'api',
        path,
      });
    }
  });

  it('forwards to ingest only the headers it reads, each as sent', async () => {
    const seen = await sent(
      'POST /api/public/v1/usage/events HTTP/1.1',
      Buffer.concat([
        header('Authorization', 'Bearer sk_test_x'),
        header('Content-Type', 'application/json'),
        header('Idempotency-Key', 'order-1'),
        header('X-Request-ID', 'b0e6f5a8-8d0f-4a5e-9f5e-2f4f0b7c8e21'),
        // not read by ingest: never forwarded to it, whatever it holds (uWS would hang on \x01)
        header('X-Other', 'a\x01b'),
        header('Cookie', 'c=1'),
      ]),
      '{}',
    );
    expect(seen.served_by).toBe('ingest');
    const names = seen.headers!.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());
    expect(names.sort()).toEqual(
      [
        'authorization',
        'content-length',
        'content-type',
        'host',
        'idempotency-key',
        'x-forwarded-for',
        'x-forwarded-proto',
        'x-request-id',
      ].sort(),
    );
    expect(seen.headers).toContain('order-1');
  });

  it('sends a usage request with any header ingest reads outside printable ASCII, or with a comma, to api', async () => {
    // uWS would trim the bytes of "é" off an edge: another key, another API key, another media type
    const post = 'POST /api/public/v1/usage/events HTTP/1.1';
    expect((await sent(post, header('Idempotency-Key', 'order-1'))).served_by).toBe('ingest');
    for (const [name, value] of [
      ['Idempotency-Key', 'order-1é'],
      ['Idempotency-Key', 'éorder-1'],
      ['Idempotency-Key', 'order\t1'],
      ['Idempotency-Key', 'a, b'],
      ['Authorization', 'Bearer sk_test_xé'],
      ['Content-Type', 'application/jsoné'],
      ['Content-Encoding', 'gzipé'],
      ['X-Request-ID', 'b0e6f5a8-8d0f-4a5e-9f5e-2f4f0b7c8e21é'],
    ] as const) {
      expect((await sent(post, header(name, value))).served_by, `${name}: ${value}`).toBe('api');
    }
    // a repeated key: nginx 1.23+ would join the values with ", "; the services read the first
    const repeated = await sent(
      post,
      Buffer.concat([header('Idempotency-Key', 'k1'), header('Idempotency-Key', 'k2')]),
    );
    if (repeated.served_by === 'ingest') expect(repeated.headers).toContain('k1');
    expect(repeated.headers).not.toContain('k1, k2');
  });

  it('keeps health and metrics off the public entry point, in every spelling', async () => {
    for (const route of OPS_PATH_SPELLINGS) {
      const answer = await sent(`GET ${route} HTTP/1.1`);
      expect(answer.served_by, route).toBeUndefined();
      expect(answer.status, route).toBe(404);
    }
  });
});
