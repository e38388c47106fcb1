import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startTestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';

describe('api service while closing', () => {
  it('answers a request still arriving on an open connection 503 with the error body, Retry-After and X-Request-ID', async () => {
    const api = await startTestApi();
    try {
      await api.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = api.app.server.address() as net.AddressInfo;
      const org = await createTestOrg(api.platform.db);
      const socket = net.connect(port, '127.0.0.1');
      const received: string[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk.toString('latin1')));
      const body = JSON.stringify({ name: 'Closing Co' });
      // A request in progress when closing starts: its body is still to come.
      socket.write(
        `POST /api/public/v1/customers HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer ${org.apiKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      await sleep(200);
      const closed = api.app.close();
      await sleep(100);
      // ...it completes, and the next request on the connection arrives while closing.
      socket.write(
        `${body}GET /api/public/v1/customers HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer ${org.apiKey}\r\n\r\n`,
      );
      await expect.poll(() => received.join(''), { timeout: 10_000 }).toMatch(/HTTP\/1\.1 503 /);
      await closed;
      const text = received.join('');
      expect(text).toMatch(/^HTTP\/1\.1 201 /);
      const answer = text.slice(text.indexOf('HTTP/1.1 503'));
      expect(answer).toMatch(/\r\nretry-after: 1\r\n/i);
      expect(answer).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
      expect(answer).toMatch(/\r\nconnection: close\r\n/i);
      expect(answer).toContain('"error_code":"SERVICE_UNAVAILABLE"');
      expect(answer).toContain('The service is shutting down; retry.');
      socket.destroy();
    } finally {
      await api.close();
    }
  });
});
