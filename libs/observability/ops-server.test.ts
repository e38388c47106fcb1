import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { checkReadiness, clickhouseCheck, type DependencyCheck } from './health.js';
import { answerOpsRequest, type OpsServer, startOpsServer } from './ops-server.js';

/** The readiness logic alone, on plain probes (databaseCheck and the others run against real services under test/). */
const up = (name: string): DependencyCheck => ({ name, probe: async () => 'pong' });
const down = (name: string, message: string): DependencyCheck => ({
  name,
  probe: async () => {
    throw new Error(message);
  },
});
const hung = (name: string): DependencyCheck => ({ name, probe: () => new Promise(() => {}) });

describe('checkReadiness', () => {
  afterEach(() => vi.useRealTimers());

  it('is ready only while every dependency answers, and names the one that does not', async () => {
    expect(await checkReadiness([])).toEqual({ ready: true, checks: {} });
    const all = await checkReadiness([up('upstream'), up('sidecar')]);
    expect(all.ready).toBe(true);
    expect(all.checks.upstream).toMatchObject({ status: 'ok' });
    expect(all.checks.upstream).not.toHaveProperty('error');

    const one = await checkReadiness([up('upstream'), down('sidecar', 'connect ECONNREFUSED 127.0.0.1:1')]);
    expect(one.ready).toBe(false);
    expect(one.checks.upstream).toMatchObject({ status: 'ok' });
    expect(one.checks.sidecar).toMatchObject({ status: 'down', error: 'connect ECONNREFUSED 127.0.0.1:1' });
  });

  it('says why a probe failed, whatever it rejected with', async () => {
    const { checks } = await checkReadiness([
      { name: 'text', probe: () => Promise.reject('socket closed') },
      { name: 'blank', probe: () => Promise.reject(new Error('')) },
    ]);
    expect(checks.text).toMatchObject({ status: 'down', error: 'socket closed' });
    expect(checks.blank).toMatchObject({ status: 'down', error: 'Error' });
  });

  it('reports how long each probe took, in milliseconds', async () => {
    const slow: DependencyCheck = {
      name: 'slow',
      probe: () => new Promise((resolve) => setTimeout(resolve, 60)),
    };
    const { checks } = await checkReadiness([slow]);
    expect(checks.slow!.latency_ms).toBeGreaterThanOrEqual(50);
    expect(checks.slow!.latency_ms).toBeLessThan(1000);
  });

  it('reports a dependency that never answers as down after 2 s, not before', async () => {
    vi.useFakeTimers();
    // A probe that answered leaves no timer behind (a scrape every few seconds would pile them up).
    await checkReadiness([up('upstream'), down('sidecar', 'refused')]);
    expect(vi.getTimerCount()).toBe(0);
    let settled = false;
    const readiness = checkReadiness([up('upstream'), hung('stalled')]).finally(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(1999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const { ready, checks } = await readiness;
    expect(ready).toBe(false);
    expect(checks.stalled).toMatchObject({ status: 'down', error: 'no answer within 2000 ms' });
    expect(checks.upstream).toMatchObject({ status: 'ok' });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('answerOpsRequest', () => {
  it('answers /readyz 503 not_ready while a dependency is down, 200 ready once it answers', async () => {
    const notReady = await answerOpsRequest('/readyz', () => [up('upstream'), down('sidecar', 'refused')]);
    expect(notReady?.status).toBe(503);
    expect(JSON.parse(notReady!.body)).toMatchObject({ status: 'not_ready', ready: false });

    const ready = await answerOpsRequest('/readyz', () => [up('upstream')], { server: 'node' });
    expect(ready?.status).toBe(200);
    expect(JSON.parse(ready!.body)).toMatchObject({
      status: 'ready',
      ready: true,
      details: { server: 'node' },
    });
    expect(await answerOpsRequest('/healthz', () => [down('sidecar', 'refused')])).toMatchObject({
      status: 200,
    });
    expect(await answerOpsRequest('/other', () => [])).toBeUndefined();
  });
});

describe('startOpsServer', () => {
  let ops: OpsServer;
  let checks: DependencyCheck[] = [up('upstream')];
  beforeAll(async () => {
    ops = await startOpsServer({ host: '127.0.0.1', port: 0, checks: () => checks });
  });
  afterAll(() => ops?.close());

  const url = (path: string) => `http://127.0.0.1:${ops.port}${path}`;

  it('answers the three routes (a query string aside), 404 elsewhere, never cached', async () => {
    const health = await fetch(url('/healthz?probe=1'));
    expect(health.status).toBe(200);
    expect(health.headers.get('cache-control')).toBe('no-store');
    expect(await health.json()).toEqual({ status: 'ok' });

    checks = [up('upstream'), down('sidecar', 'refused')];
    expect((await fetch(url('/readyz'))).status).toBe(503);
    checks = [up('upstream')];
    expect((await fetch(url('/readyz'))).status).toBe(200);

    const metrics = await fetch(url('/metrics'));
    expect(metrics.status).toBe(200);
    // the version tells Prometheus which text format to parse
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await metrics.text()).toContain('# TYPE billing_http_requests_total counter');

    expect((await fetch(url('/healthz/extra'))).status).toBe(404);
  });

  it('refuses other methods with 405 and answers HEAD without a body', async () => {
    const post = await fetch(url('/healthz'), { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    const head = await fetch(url('/readyz'), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });
});

describe('startOpsServer failing', () => {
  it('answers 500 when the checks cannot be listed', async () => {
    const ops = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      checks: () => {
        throw new Error('sinks not started');
      },
    });
    try {
      const answer = await fetch(`http://127.0.0.1:${ops.port}/readyz`);
      expect(answer.status).toBe(500);
      expect(await answer.json()).toEqual({ error: 'internal error' });
    } finally {
      await ops.close();
    }
  });
});

describe('startOpsServer closing', () => {
  it('closes at once with a request still open on it', async () => {
    const ops = await startOpsServer({ host: '127.0.0.1', port: 0, checks: () => [] });
    // half a request: the connection is busy, and would stay so until its headers time out
    const accepted = new Promise<void>((resolve) => ops.server.once('connection', () => resolve()));
    const socket = connect(ops.port, '127.0.0.1');
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write('GET /healthz HTTP/1.1\r\nhost: ops\r\n');
    await accepted;
    await ops.close();
    await ended;
  });
});

describe('clickhouseCheck', () => {
  let server: Server;
  let status = 200;
  const seen: { url?: string; authorization?: string }[] = [];
  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push({ url: request.url, authorization: request.headers.authorization });
      response.writeHead(status, { 'content-type': 'text/plain' });
      response.end(status === 200 ? 'Ok.\n' : 'down');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("pings /ping without the URL's user and password, which fetch would refuse and /readyz would show", async () => {
    const { port } = server.address() as AddressInfo;
    const check = clickhouseCheck(`http://billing:s3cret@127.0.0.1:${port}/?database=billing`);
    status = 200;
    const ready = await checkReadiness([check]);
    expect(ready).toMatchObject({ ready: true, checks: { clickhouse: { status: 'ok' } } });
    expect(seen.at(-1)).toEqual({ url: '/ping', authorization: undefined });
    // a password alone is a credential too
    const passwordOnly = await checkReadiness([clickhouseCheck(`http://:s3cret@127.0.0.1:${port}`)]);
    expect(passwordOnly.ready).toBe(true);
  });

  it('is down while ClickHouse answers /ping with an error status, naming it', async () => {
    const { port } = server.address() as AddressInfo;
    status = 503;
    const { ready, checks } = await checkReadiness([clickhouseCheck(`http://127.0.0.1:${port}`)]);
    expect(ready).toBe(false);
    expect(checks.clickhouse).toMatchObject({ status: 'down', error: 'ClickHouse /ping answered HTTP 503' });
    expect(JSON.stringify(checks)).not.toContain('s3cret');
  });
});
