import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from '@electric-sql/pglite-socket';
import { describe, expect, it } from 'vitest';

/**
 * What pglite-socket-adapter.ts relies on in pglite-socket. If one of these fails, pglite-socket
 * changed under the adapter: read its changes (is electric-sql/pglite#1046 fixed?) before moving
 * the pin.
 */
describe('pglite-socket, as the adapter uses it', () => {
  it('is the pinned version, pinned exactly', () => {
    const require = createRequire(import.meta.url);
    const installed = JSON.parse(
      readFileSync(
        path.join(path.dirname(require.resolve('@electric-sql/pglite-socket')), '../package.json'),
        'utf8',
      ),
    ) as { version: string };
    const manifest = JSON.parse(
      readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8'),
    ) as {
      dependencies: Record<string, string>;
    };
    expect(installed.version).toBe('0.2.17');
    expect(manifest.dependencies['@electric-sql/pglite-socket']).toBe('0.2.17');
  });

  it('feeds each whole protocol message of a connection to the queue it is given, and its answer back', async () => {
    const calls: string[] = [];
    const queue = {
      enqueue: async (connection: number, message: Uint8Array, onData: (data: Uint8Array) => void) => {
        calls.push(`enqueue ${connection} ${String.fromCharCode(message[0]!)} ${message.length}`);
        onData(new TextEncoder().encode('answer'));
        return 6;
      },
      getQueueLength: () => 0,
      clearQueueForHandler: (connection: number) => void calls.push(`clear ${connection}`),
      clearTransactionIfNeeded: async (connection: number) => void calls.push(`release ${connection}`),
    };
    const handler = new PGLiteSocketHandler({
      queryQueue: queue as unknown as PGLiteSocketHandlerOptions['queryQueue'],
      closeOnDetach: true,
    });
    const server = net.createServer((socket) => void handler.attach(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    try {
      const answer = new Promise<string>((resolve) => client.once('data', (data) => resolve(String(data))));
      // a simple Query message ('Q', int32 length, "SELECT 1\0"), sent in two pieces
      const query = Buffer.concat([Buffer.from('Q'), Buffer.alloc(4), Buffer.from('SELECT 1\0')]);
      query.writeInt32BE(query.length - 1, 1);
      client.write(query.subarray(0, 3));
      await new Promise((resolve) => setTimeout(resolve, 20));
      client.write(query.subarray(3));
      expect(await answer).toBe('answer');
      expect(calls).toEqual([`enqueue ${handler.handlerId} Q ${query.length}`]);
      client.end();
      await new Promise((resolve) => setTimeout(resolve, 100));
      // a closed connection gives up its queued messages and whatever it held
      expect(calls.slice(1)).toEqual([`clear ${handler.handlerId}`, `release ${handler.handlerId}`]);
    } finally {
      client.destroy();
      server.close();
    }
  });
});
