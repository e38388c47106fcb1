import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { serviceProcesses } from '../usage/support.js';

/**
 * The api service as `npm run start:api` runs it, stopped with SIGTERM while clients that have
 * already gone away still have requests running: their work finishes before the database and
 * Redis close, so a shutdown under load logs no errors.
 */
describe('api service process', () => {
  const processes = serviceProcesses('api_process');
  let org: TestOrg;

  beforeAll(async () => {
    org = await createTestOrg(processes.database.db);
  });

  it('lets requests of clients that went away finish before closing the database and Redis', async () => {
    const env = processes.env({
      PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: testServices().redisUrl,
      REDIS_KEY_PREFIX: `${uniqueName('api_process')}:`,
      SHUTDOWN_TIMEOUT_MS: '10000',
    });
    const api = await processes.start(
      'services/api/main.ts',
      env,
      /listening at http:\/\/127\.0\.0\.1:(\d+)/,
    );
    const port = Number(api.match[1]);
    const paths = ['/customers?limit=100', '/invoices?limit=100', '/subscriptions?limit=100', '/products'];
    for (let i = 0; i < 60; i++) {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(
          `GET /api/public/v1${paths[i % paths.length]} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
            `Authorization: Bearer ${org.apiKey}\r\n\r\n`,
        );
        // gone before the answer: the request keeps running on the server
        setTimeout(() => socket.destroy(), 1);
      });
      socket.on('error', () => {});
    }
    await sleep(5);
    expect(await api.stop()).toBe(0);
    const errors = api
      .output()
      .split('\n')
      .filter((line) => line.includes('"level":"error"') || line.includes('"level":50'));
    expect(errors).toEqual([]);
  });
});
