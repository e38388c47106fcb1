import { describe, expect, it } from 'vitest';
import { lastCharacters, WebhookSender } from './webhook-sender.js';

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
});
