import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { freshKey, useUsageStack } from './support.js';

describe('ingest service while draining', () => {
  const usage = useUsageStack('in-process');

  it('answers the requests in flight, each closing its connection so no next request is sent on it', async () => {
    const { stack, org, items } = usage;
    const socket = net.connect(stack.ingest.port, '127.0.0.1');
    const received: string[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk.toString('latin1')));
    const body = JSON.stringify({ subscription_item_id: items.metered, quantity: 1 });
    // in flight when the drain starts: its body is still to come
    socket.write(
      `POST /api/public/v1/usage/events HTTP/1.1\r\nHost: ingest\r\nAuthorization: Bearer ${org.apiKey}\r\n` +
        `Idempotency-Key: ${freshKey('drain')}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    await sleep(200);
    const drained = stack.ingest.close();
    await sleep(50);
    socket.write(body);
    await drained;
    await expect.poll(() => received.join(''), { timeout: 5000 }).toMatch(/\r\n\r\n\{/);
    const answer = received.join('');
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    socket.destroy();
  });
});
