import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { encodeCommand } from './resp.js';

describe('encodeCommand', () => {
  it('writes the bytes ioredis writes for the same command', () => {
    const args = ['0123abcd', 3, 'usage:1:2:ключ-é-🙂', '', 'P|x|1.5|0|0', 2_592_000, -1, 'a'.repeat(1000)];
    const theirs = new Command('evalsha', args).toWritable({} as never);
    expect(encodeCommand('evalsha', args)).toEqual(Buffer.from(theirs as string));
  });

  it('counts bytes, not characters, in every length', () => {
    expect(encodeCommand('set', ['é', '🙂']).toString()).toBe('*3\r\n$3\r\nset\r\n$2\r\né\r\n$4\r\n🙂\r\n');
  });
});
