import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from './open.js';

describe('openDatabase', () => {
  const sockets: net.Socket[] = [];
  let silent: net.Server | undefined;
  let dataDir: string | undefined;
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await new Promise((resolve) => silent?.close(resolve));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('gives up joining after 5 s when what listens on EMBEDDED_DB_PORT accepts and never answers', async () => {
    // Accepts and never answers, like a stray service on that port; the lock file of DATA_DIR names
    // this process and that port, so the join is tried and only its handshake can tell.
    silent = net.createServer((socket) => {
      socket.on('error', () => {});
      sockets.push(socket);
    });
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    dataDir = await mkdtemp(path.join(tmpdir(), 'open-silent-'));
    await writeFile(path.join(dataDir, 'pgdata.lock'), JSON.stringify({ pid: process.pid, port }));
    const started = Date.now();
    await expect(
      openDatabase(
        {
          DATABASE_POOL_SIZE: 2,
          DATABASE_QUERY_TIMEOUT_MS: 60_000,
          DATABASE_STALL_MS: 2000,
          DATA_DIR: dataDir,
          EMBEDDED_DB_PORT: port,
        },
        'test',
      ),
    ).rejects.toThrow(
      new RegExp(
        `port ${port} \\(EMBEDDED_DB_PORT\\) is in use, but not by the embedded database \\(no answer within 5000 ms\\)`,
      ),
    );
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(4900);
    expect(waited).toBeLessThan(9000);
  }, 15_000);
});
