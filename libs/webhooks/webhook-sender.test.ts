import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { lastCharacters, RESPONSE_BODY_CHARACTERS, WebhookSender } from './webhook-sender.js';

describe('lastCharacters', () => {
  it('keeps a text of exactly `count` code points, or fewer, as it is', () => {
    expect(lastCharacters('abc', 3)).toBe('abc');
    expect(lastCharacters('ab', 3)).toBe('ab');
    expect(lastCharacters('', 3)).toBe('');
  });

  it('keeps the last `count` code points of a longer text', () => {
    expect(lastCharacters('abcd', 3)).toBe('bcd');
    expect(lastCharacters('x'.repeat(1001), 1000)).toBe('x'.repeat(1000));
  });

  it('counts a character outside the BMP as one, never cutting one in half', () => {
    // 4 code points in 8 UTF-16 units: the length check sees 8, the cut counts code points
    expect(lastCharacters('😀😁😂😃', 3)).toBe('😁😂😃');
    expect(lastCharacters('a😀😁😂', 2)).toBe('😁😂');
    expect(lastCharacters('😀😁', 2)).toBe('😀😁');
  });
});

describe('WebhookSender', () => {
  it('answers a URL it cannot send to with a connection error, before any request', async () => {
    const sender = new WebhookSender({ timeoutMs: 1000, allowLocalhost: false });
    try {
      const send = (url: string) => sender.send({ url, body: '{}', headers: {} });
      expect(await send('ftp://hooks.example.com/')).toEqual({
        result: 'connection_error',
        responseCode: 0,
        responseBody: 'Connection error: unsupported scheme ftp:',
        durationMs: expect.any(Number),
      });
      expect(await send('not a url')).toMatchObject({
        result: 'connection_error',
        responseBody: 'Connection error: the endpoint URL is invalid.',
      });
    } finally {
      sender.close();
    }
  });

  it('keeps the end of a long response body whose pieces arrive apart, without NUL, whole characters', async () => {
    // a long first piece the last 1,000 characters reach into, then a short one; é is two bytes
    const pieces = [`${'0123456789'.repeat(399)}é\u0000é`, `${'z'.repeat(99)}é`];
    const server = createServer(async (_request, response) => {
      response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      for (const piece of pieces) {
        response.write(piece);
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const sender = new WebhookSender({ timeoutMs: 5000, allowLocalhost: true });
    try {
      const outcome = await sender.send({ url: `http://127.0.0.1:${port}/hook`, body: '{}', headers: {} });
      const whole = pieces.join('').replaceAll('\u0000', '');
      expect(outcome).toMatchObject({ result: 'failure', responseCode: 500 });
      expect(outcome.responseBody).toBe(whole.slice(-RESPONSE_BODY_CHARACTERS));
    } finally {
      sender.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
