import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { IngestServer } from '../../services/ingest/server.js';
import { freshKey, startIngestFor, usageRows, useUsageStack } from './support.js';

describe('ingest service while draining', () => {
  const usage = useUsageStack('in-process');

  it('answers the requests in flight, each closing its connection so no next request is sent on it', async () => {
    const { stack } = usage;
    await answersInFlight(stack.ingest);
  });

  it("answers the requests in flight on Node's HTTP server too, closing their connections", async () => {
    const { stack } = usage;
    await answersInFlight(await startIngestFor(stack.api, stack.api.usage, { transport: 'node-http' }));
  });

  it.each(['uws', 'node-http'] as const)(
    'counts every answered request out: after a 201, 400, 401, 404, 405 and 413 the drain ends at once (%s)',
    async (transport) => {
      const { stack, org, items } = usage;
      const ingest = await startIngestFor(stack.api, stack.api.usage, { transport });
      const url = (path: string) => `http://127.0.0.1:${ingest.port}/api/public/v1${path}`;
      const post = (body: string, headers: Record<string, string> = {}) =>
        fetch(url('/usage/events'), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${org.apiKey}`,
            'content-type': 'application/json',
            'idempotency-key': freshKey('counted'),
            ...headers,
          },
          body,
        }).then((response) => response.status);
      const event = JSON.stringify({ subscription_item_id: items.metered, quantity: 1 });
      const statuses = [
        await post(event),
        await post('{"quantity":'),
        await post(event, { authorization: 'Bearer sk_live_wrong' }),
        await fetch(url('/usage/nope')).then((response) => response.status),
        await fetch(url('/usage/events'), { method: 'DELETE' }).then((response) => response.status),
        await post(' '.repeat(stack.api.config.INGEST_BODY_LIMIT_BYTES + 1)),
      ];
      expect(statuses).toEqual([201, 400, 401, 404, 405, 413]);
      const drained = await Promise.race([
        ingest.close().then(() => 'drained'),
        sleep(2000).then(() => 'still waiting'),
      ]);
      expect(drained).toBe('drained');
    },
  );

  async function answersInFlight(ingest: IngestServer) {
    const { org, items } = usage;
    const socket = net.connect(ingest.port, '127.0.0.1');
    const received: string[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk.toString('latin1')));
    const body = JSON.stringify({ subscription_item_id: items.metered, quantity: 1 });
    // in flight when the drain starts: its body is still to come
    socket.write(
      `POST /api/public/v1/usage/events HTTP/1.1\r\nHost: ingest\r\nAuthorization: Bearer ${org.apiKey}\r\n` +
        `Idempotency-Key: ${freshKey('drain')}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    await sleep(200);
    let closed = false;
    const drained = ingest.close().then(() => {
      closed = true;
    });
    await sleep(50);
    expect(closed, 'the drain waits for the request in flight').toBe(false);
    socket.write(body);
    await drained;
    await expect.poll(() => received.join(''), { timeout: 5000 }).toMatch(/\r\n\r\n\{/);
    const answer = received.join('');
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    socket.destroy();
  }

  it('answers a request arriving on an open connection once the drain began 503 with Retry-After, and closes it', async () => {
    const { stack, org, items } = usage;
    const ingest = await startIngestFor(stack.api, stack.api.usage);
    const socket = net.connect(ingest.port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const body = JSON.stringify({ subscription_item_id: items.metered, quantity: 1 });
    const request = (key: string) =>
      `POST /api/public/v1/usage/events HTTP/1.1\r\nHost: ingest\r\nAuthorization: Bearer ${org.apiKey}\r\n` +
      `Idempotency-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    try {
      socket.write(request(freshKey('before')));
      await expect.poll(() => received, { timeout: 5000 }).toMatch(/\r\n\r\n\{.*\}$/s);
      expect(received).toMatch(/^HTTP\/1\.1 201 /);
      expect(received).not.toMatch(/\r\nconnection: close\r\n/i);
      received = '';
      // nothing in flight: the drain is over at once, and the connection kept alive is still open
      await ingest.close();
      const key = freshKey('after');
      socket.write(request(key));
      await expect.poll(() => received, { timeout: 5000 }).toMatch(/\r\n\r\n\{.*\}$/s);
      const [head = '', payload = ''] = received.split('\r\n\r\n', 2);
      expect(head).toMatch(/^HTTP\/1\.1 503 /);
      expect(head).toMatch(/\r\nretry-after: 1\r\n/i);
      expect(head).toMatch(/\r\nconnection: close\r\n/i);
      expect(JSON.parse(payload)).toMatchObject({
        error_code: 'SERVICE_UNAVAILABLE',
        detail: 'The service is shutting down; retry.',
        request_id: /^[0-9a-f-]{36}$/.exec(head.match(/x-request-id: (\S+)/i)?.[1] ?? '')?.[0],
      });
      await closed;
      expect(
        (await usageRows(stack.api.platform.db, org.orgId)).map((row) => row.idempotency_key),
      ).not.toContain(key);
    } finally {
      socket.destroy();
      await ingest.close();
    }
  });
});
