import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AUTOCANNON_VERSION, checkAutocannonVersion, prebuiltRequest } from './autocannon-adapter.js';
import { autocannon, requestBytes } from './support.js';

/**
 * The guard of the one adapter that reaches into autocannon (autocannon-adapter.ts). If one of
 * these fails, autocannon changed under the adapter: read its changes before moving the pin.
 */
const require = createRequire(import.meta.url);

describe('autocannon, as the adapter uses it', () => {
  it('is the pinned version, pinned exactly', () => {
    expect(require('autocannon/package.json').version).toBe(AUTOCANNON_VERSION);
    expect(require('../package.json').devDependencies.autocannon).toBe(AUTOCANNON_VERSION);
  });

  it('has the internals the adapter touches, of the shape it expects', () => {
    const RequestIterator = require('autocannon/lib/requestIterator');
    expect(typeof RequestIterator.prototype.rebuildRequest).toBe('function');
    // each request of an entry with setupRequest is rebuilt through rebuildRequest...
    expect(RequestIterator.prototype.nextRequest.toString()).toMatch(
      /typeof this\.currentRequest\.setupRequest === 'function'\)\s*\{\s*this\.rebuildRequest\(\)/,
    );
    // ...and the client sends the iterator's current requestBuffer
    const client = readFileSync(require.resolve('autocannon/lib/httpClient'), 'utf8');
    expect(client).toMatch(/this\.conn\.write\(this\.getRequestBuffer\(\)\)/);
    expect(client).toMatch(/return this\.requestIterator\.currentRequest\.requestBuffer/);
  });

  it('refuses another version when loaded, loudly', () => {
    const manifest = require('autocannon/package.json') as { version: string };
    const pinned = manifest.version;
    manifest.version = '8.1.0';
    try {
      expect(() => checkAutocannonVersion()).toThrow(/autocannon 8\.1\.0 is installed/);
    } finally {
      manifest.version = pinned;
    }
  });
});

/** A server that records each request's raw bytes and answers 204; one request in flight per connection. */
function recordingServer(received: Buffer[]): Promise<{ server: Server; url: string }> {
  const server = createServer((socket) => {
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const headEnd = pending.indexOf('\r\n\r\n');
        if (headEnd === -1) return;
        const length = Number(
          /content-length: (\d+)/i.exec(pending.subarray(0, headEnd).toString())?.[1] ?? 0,
        );
        const end = headEnd + 4 + length;
        if (pending.length < end) return;
        received.push(Buffer.from(pending.subarray(0, end)));
        pending = pending.subarray(end);
        socket.write('HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n');
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/usage` }),
    ),
  );
}

describe('a prebuilt request', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('puts on the wire exactly the bytes it was given, a new one for every request', async () => {
    const received: Buffer[] = [];
    const started = await recordingServer(received);
    server = started.server;
    const built: Buffer[] = [];
    const next = () => {
      const bytes = requestBytes(started.url, {
        method: 'POST',
        headers: { 'idempotency-key': `key-${built.length + 1}` },
        body: `{"n":${built.length + 1}}`,
      });
      built.push(bytes);
      return bytes;
    };
    const result = await autocannon({
      url: started.url,
      connections: 1,
      duration: 10,
      amount: 40,
      requests: [prebuiltRequest(next)],
    });

    expect(result['2xx']).toBe(40);
    expect(received).toHaveLength(40);
    // one connection: sent in the order built, each as built (the last ones built may be unsent)
    expect(received.map((bytes) => bytes.toString())).toEqual(
      built.slice(0, 40).map((bytes) => bytes.toString()),
    );
    expect(new Set(received.map((bytes) => bytes.toString())).size).toBe(40);
  });
});
