import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { useUsageStack } from './support.js';

describe("ingest service on Node's HTTP server", () => {
  const usage = useUsageStack('in-process');

  /** Writes `request` as is and reads until the server closes the connection. */
  const exchange = async (request: string): Promise<string> => {
    const socket = net.connect(usage.stack.nodeIngest.port, '127.0.0.1');
    socket.write(request);
    const chunks: Buffer[] = [];
    for await (const chunk of socket) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('latin1');
  };

  it('answers a request its parser refuses 400 with the error body and X-Request-ID, and closes', async () => {
    for (const header of ['X-Note: a\u0001b', 'Bad Name: x']) {
      // no `Connection: close`: the server closes the connection itself
      const received = await exchange(
        `POST ${BASE_PATH}/usage/events HTTP/1.1\r\nHost: ingest\r\n${header}\r\nContent-Length: 2\r\n\r\n{}`,
      );
      const [head = '', payload = ''] = received.split('\r\n\r\n', 2);
      expect(head, header).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(head, header).toMatch(/\r\nconnection: close(\r\n|$)/i);
      const requestId = /\r\nX-Request-ID: ([^\r]+)/i.exec(head)?.[1];
      expect(JSON.parse(payload), header).toEqual({
        error_code: 'BAD_REQUEST',
        detail: 'The request is not valid HTTP.',
        request_id: requestId,
      });
      expect(Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1])).toBe(Buffer.byteLength(payload));
    }
  });
});
