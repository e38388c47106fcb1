import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from './open.js';

describe('openDatabase', () => {
  const sockets: net.Socket[] = [];
  let silent: net.Server | undefined;
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await new Promise((resolve) => silent?.close(resolve));
  });

  it('says EMBEDDED_DB_PORT is taken when something that is not the embedded database listens there', async () => {
    // Accepts and never answers, like a stray service on that port.
    silent = net.createServer((socket) => {
      socket.on('error', () => {});
      sockets.push(socket);
    });
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    const started = Date.now();
    await expect(
      openDatabase(
        {
          DATABASE_POOL_SIZE: 2,
          DATABASE_QUERY_TIMEOUT_MS: 60_000,
          DATABASE_STALL_MS: 2000,
          DATA_DIR: '/nonexistent',
          EMBEDDED_DB_PORT: port,
        },
        'test',
      ),
    ).rejects.toThrow(
      new RegExp(`port ${port} \\(EMBEDDED_DB_PORT\\) is in use, but not by the embedded database`),
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 15_000);
});
