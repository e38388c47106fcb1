import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CommonConfig, embeddedSettings, loadConfig } from '../../libs/config/index.js';
import { openPlatform } from '../../libs/platform/index.js';
import { isListening } from '../helpers/processes.js';
import { freeTcpPort } from '../helpers/redis-server.js';

describe('openPlatform on the embedded database', () => {
  it('stops the embedded database it started when Redis cannot be reached', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-platform-'));
    const port = await freeTcpPort();
    const config = loadConfig(embeddedSettings, {
      APP_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATA_DIR: dataDir,
      EMBEDDED_DB_PORT: String(port),
      // A local port nothing listens on: refused at once.
      REDIS_URL: 'redis://127.0.0.1:1',
    });
    try {
      await expect(openPlatform(config as CommonConfig, 'embedded-test')).rejects.toThrow(
        /^cannot reach REDIS_URL: /,
      );
      // Left served, the database would hold its port and its directory's lock: the next start
      // of this directory would join a server nobody stops, or be refused.
      expect(await isListening(port)).toBe(false);
      expect(existsSync(path.join(dataDir, 'pgdata.lock'))).toBe(false);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
