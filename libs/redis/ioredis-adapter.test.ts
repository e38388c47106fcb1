import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { IOREDIS_VERSION } from './ioredis-adapter.js';

/**
 * The guard of the one adapter that reaches past ioredis' public API (ioredis-adapter.ts). If one
 * of these fails, ioredis changed under the adapter: read its changes before moving the pin.
 * test/foundation/redis-bulk-script.test.ts runs the adapter against a real Redis.
 */
const require = createRequire(import.meta.url);

describe('ioredis, as the adapter uses it', () => {
  it('is the pinned version, pinned exactly', () => {
    expect(require('ioredis/package.json').version).toBe(IOREDIS_VERSION);
    expect(require('../../package.json').dependencies.ioredis).toBe(IOREDIS_VERSION);
  });

  it('builds a Command from (name, args, options) and writes what its toWritable returns', () => {
    const command = new Command('echo', ['x'], { replyEncoding: 'utf8' });
    expect(command.name).toBe('echo');
    expect(typeof Command.prototype.toWritable).toBe('function');
    // every path of sendCommand writes the command's own toWritable(stream), and nothing else
    const source = readFileSync(require.resolve('ioredis/built/Redis.js'), 'utf8');
    const writes = source.match(/\.write\([^)]*\)\)?;/g) ?? [];
    expect(writes.length).toBeGreaterThan(0);
    for (const write of writes) expect(write).toMatch(/^\.write\(command\.toWritable\(/);
  });
});
