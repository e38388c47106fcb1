import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { sendEncodedCommand } from './ioredis-adapter.js';
import { encodeCommand, type ScriptArgument } from './resp.js';

/**
 * A Lua script called with thousands of arguments (a usage batch's reservations: a key and a
 * record per event). Its request is encoded once, straight into one buffer (resp.ts), and sent
 * through the ioredis adapter. EVALSHA, and EVAL when Redis does not know the script (first call,
 * restart, SCRIPT FLUSH), as ioredis' own defineCommand does.
 */
export class BulkScript {
  private readonly sha: string;

  constructor(private readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async call(redis: Redis, numberOfKeys: number, args: readonly ScriptArgument[]): Promise<unknown> {
    try {
      return await send(redis, 'evalsha', [this.sha, numberOfKeys, ...args]);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return send(redis, 'eval', [this.lua, numberOfKeys, ...args]);
    }
  }
}

function send(redis: Redis, name: string, args: readonly ScriptArgument[]): Promise<unknown> {
  return sendEncodedCommand(redis, name, encodeCommand(name, args));
}
