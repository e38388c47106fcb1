import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { OPS_PATH_SPELLINGS, type RunningNginx, startNginx } from '../helpers/nginx.js';
import { freshKey, useUsageStack } from '../usage/support.js';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  ms: number;
}

/**
 * What clients send at the edge, byte for byte, to every listener a client may reach: the ingest
 * service on Node's HTTP server (its default), the api service, and deploy/nginx in front of the
 * api and the ingest service on uWebSockets.js (as deployed). A header value is never changed on
 * its way (a key or an API key with a non-ASCII byte at an edge is refused, not trimmed), a
 * malformed request is answered at once, and the operations routes stay off the proxy.
 */
describe('requests at the edge, on every listener', () => {
  const usage = useUsageStack('in-process');
  let nginx: RunningNginx;
  const listeners: Record<'ingest' | 'api' | 'nginx', number> = { ingest: 0, api: 0, nginx: 0 };

  beforeAll(async () => {
    const { stack } = usage;
    await stack.api.app.listen({ host: '127.0.0.1', port: 0 });
    listeners.api = (stack.api.app.server.address() as AddressInfo).port;
    listeners.ingest = stack.nodeIngest.port;
    nginx = await startNginx({ apiPort: listeners.api, ingestPort: stack.ingest.port });
    listeners.nginx = nginx.port;
  });
  afterAll(() => nginx?.stop());

  /** One request as raw bytes; the answer, or status 0 if the connection closed without one. */
  const send = (port: number, request: Buffer) =>
    new Promise<RawAnswer>((resolve, reject) => {
      const started = performance.now();
      const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error('no answer within 5 s'));
      }, 5000);
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('error', () => {});
      socket.on('close', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        const [head = '', body = ''] = text.split('\r\n\r\n', 2);
        const [statusLine = '', ...lines] = head.split('\r\n');
        resolve({
          status: Number(statusLine.split(' ')[1] ?? 0),
          headers: Object.fromEntries(
            lines.map((line) => [
              line.slice(0, line.indexOf(':')).toLowerCase(),
              line.slice(line.indexOf(':') + 1).trim(),
            ]),
          ),
          body,
          ms: performance.now() - started,
        });
      });
    });

  const usagePost = (headers: (string | Buffer)[], body: unknown) => {
    const text = JSON.stringify(body);
    return Buffer.concat([
      Buffer.from(`POST ${BASE_PATH}/usage/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n`),
      Buffer.from(`Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n`),
      ...headers.flatMap((line) => [Buffer.from(line), Buffer.from('\r\n')]),
      Buffer.from(`\r\n${text}`),
    ]);
  };
  const utf8 = (text: string) => Buffer.from(text, 'utf8');

  describe.each(['ingest', 'api', 'nginx'] as const)('through %s', (listener) => {
    const post = (headers: (string | Buffer)[], body: unknown) =>
      send(listeners[listener], usagePost(headers, body));
    const bearer = () => `Authorization: Bearer ${usage.org.apiKey}`;

    it('refuses a header key with a non-ASCII byte at either end instead of recording it under another key', async () => {
      const key = freshKey(`edge-${listener}`);
      for (const spelled of [`${key}é`, `é${key}`]) {
        const refused = await post([bearer(), utf8(`Idempotency-Key: ${spelled}`)], {
          subscription_item_id: usage.items.metered,
          quantity: 5,
        });
        expect(refused.status, spelled).toBe(422);
        expect(JSON.parse(refused.body).details).toEqual([
          expect.objectContaining({ field: 'Idempotency-Key' }),
        ]);
      }
      // the key itself is still free: its first event is this one, with its own quantity
      const created = await post([bearer(), `Idempotency-Key: ${key}`], {
        subscription_item_id: usage.items.metered,
        quantity: 7,
      });
      expect(created.status).toBe(201);
      expect(JSON.parse(created.body).data).toMatchObject({ idempotency_key: key, quantity: 7 });
    });

    it('refuses an API key followed by a non-ASCII byte, as an unknown key', async () => {
      const answer = await post([utf8(`${bearer()}é`), `Idempotency-Key: ${freshKey()}`], {
        subscription_item_id: usage.items.metered,
        quantity: 1,
      });
      expect(answer.status).toBe(401);
    });

    it('answers a key with a control character at once, recording nothing', async () => {
      const answer = await post([bearer(), 'Idempotency-Key: a\x01b'], {
        subscription_item_id: usage.items.metered,
        quantity: 1,
      });
      expect(answer.status).toBe(400);
      expect(answer.ms).toBeLessThan(2000);
    });

    it('answers 415 to a chunked body without a Content-Type, even an empty one, as Fastify decides', async () => {
      const chunked = (chunks: string) =>
        Buffer.from(
          `POST ${BASE_PATH}/usage/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
            `${bearer()}\r\nIdempotency-Key: ${freshKey()}\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}`,
        );
      // nginx buffers a chunked body and forwards it with its length: an empty one is then no body
      const bodies = listener === 'nginx' ? ['2\r\n{}\r\n0\r\n\r\n'] : ['0\r\n\r\n', '2\r\n{}\r\n0\r\n\r\n'];
      for (const chunks of bodies) {
        const answer = await send(listeners[listener], chunked(chunks));
        expect(answer.status, JSON.stringify(chunks)).toBe(415);
        expect(JSON.parse(answer.body)).toMatchObject({ error_code: 'UNSUPPORTED_MEDIA_TYPE' });
      }
    });

    it('answers an unknown route 404 and a wrong method 405 with Allow, even with a wrong key', async () => {
      for (const authorization of [bearer(), 'Authorization: Bearer sk_live_wrong']) {
        const request = (line: string) =>
          Buffer.from(`${line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${authorization}\r\n\r\n`);
        const unknown = await send(listeners[listener], request(`GET ${BASE_PATH}/usage/nope`));
        expect(unknown.status, authorization).toBe(404);
        expect(JSON.parse(unknown.body)).toMatchObject({ error_code: 'NOT_FOUND' });
        const wrongMethod = await send(listeners[listener], request(`DELETE ${BASE_PATH}/usage/events`));
        expect(wrongMethod.status, authorization).toBe(405);
        // the api also lists usage events; the ingest service takes POST only
        expect(wrongMethod.headers.allow).toBe(listener === 'ingest' ? 'POST' : 'GET, HEAD, POST');
        expect(JSON.parse(wrongMethod.body)).toMatchObject({ error_code: 'METHOD_NOT_ALLOWED' });
      }
    });

    it.each([
      ['a control character in a header value', 'X-Note: a\x01b'],
      ['a space in a header name', 'X Note: b'],
    ])('answers a request with %s at once, never holding the connection', async (_case, line) => {
      const answer = await post([bearer(), `Idempotency-Key: ${freshKey()}`, line], {
        subscription_item_id: usage.items.metered,
        quantity: 1,
      });
      expect(answer.ms).toBeLessThan(2000);
      if (listener === 'nginx' && line.startsWith('X-Note')) {
        // nginx takes the value and forwards to ingest only the headers it reads
        expect(answer.status).toBe(201);
      } else {
        expect(answer.status).toBe(400);
        if (listener !== 'nginx') {
          expect(JSON.parse(answer.body)).toMatchObject({ error_code: 'BAD_REQUEST' });
          expect(answer.headers['x-request-id']).toBe(JSON.parse(answer.body).request_id);
        }
      }
    });
  });

  it('keeps the operations routes off the proxy in every spelling the services route', async () => {
    for (const path of OPS_PATH_SPELLINGS) {
      const request = Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      const answer = await send(listeners.nginx, request);
      expect(answer.status, path).toBe(404);
      expect(answer.body, path).not.toMatch(/process_cpu|"status"/);
    }
    // ...while the api itself routes several of them (why the proxy blocks the class)
    const direct = await send(
      listeners.api,
      Buffer.from('GET /metrics/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    );
    expect(direct.status).toBe(200);
  });
});
