import { createHash } from 'node:crypto';
import { Command, type Redis } from 'ioredis';

export type ScriptArgument = string | number;

/**
 * A Lua script called with thousands of arguments (a usage batch's reservations: a key and a
 * record per event). ioredis writes a command as one string built by concatenation, argument by
 * argument, which V8 must then walk and copy (flatten) and encode again before the socket sends
 * it: for such a call that cost more CPU than the rest of ioredis' work. Here the request is
 * encoded once, straight into one buffer. EVALSHA, and EVAL when Redis does not know the script
 * (first call, restart, SCRIPT FLUSH), as ioredis' own defineCommand does.
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

class EncodedCommand extends Command {
  constructor(
    name: string,
    private readonly bytes: Buffer,
  ) {
    super(name, [], { replyEncoding: 'utf8' });
  }

  override toWritable(): Buffer {
    return this.bytes;
  }
}

function send(redis: Redis, name: string, args: readonly ScriptArgument[]): Promise<unknown> {
  return redis.sendCommand(new EncodedCommand(name, encodeCommand(name, args))) as Promise<unknown>;
}

const CR = 13;
const LF = 10;

/** A command in RESP, as Redis reads it: an array of bulk strings (UTF-8). */
export function encodeCommand(name: string, args: readonly ScriptArgument[]): Buffer {
  const count = args.length + 1;
  const texts: string[] = new Array(count);
  const lengths: number[] = new Array(count);
  let size = 1 + digitCount(count) + 2;
  for (let i = 0; i < count; i++) {
    const arg = i === 0 ? name : args[i - 1]!;
    const text = typeof arg === 'string' ? arg : String(arg);
    const length = Buffer.byteLength(text);
    texts[i] = text;
    lengths[i] = length;
    size += 1 + digitCount(length) + 2 + length + 2;
  }
  const out = Buffer.allocUnsafe(size);
  out[0] = 0x2a; // '*'
  let at = writeDigits(out, 1, count);
  for (let i = 0; i < count; i++) {
    out[at++] = 0x24; // '$'
    at = writeDigits(out, at, lengths[i]!);
    at += out.write(texts[i]!, at, 'utf8');
    out[at++] = CR;
    out[at++] = LF;
  }
  return out;
}

function digitCount(n: number): number {
  let count = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    count++;
  }
  return count;
}

/** `n` in decimal, then CRLF; returns the offset after it. */
function writeDigits(out: Buffer, at: number, n: number): number {
  const end = at + digitCount(n);
  for (let i = end - 1; i >= at; i--) {
    out[i] = 0x30 + (n % 10);
    n = Math.floor(n / 10);
  }
  out[end] = CR;
  out[end + 1] = LF;
  return end + 2;
}
