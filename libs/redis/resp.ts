import { decimalLength, writeDecimal } from '../bytes/index.js';

export type ScriptArgument = string | number;

const CR = 13;
const LF = 10;

/** A command in RESP, as Redis reads it: an array of bulk strings (UTF-8), written into one buffer. */
export function encodeCommand(name: string, args: readonly ScriptArgument[]): Buffer {
  const count = args.length + 1;
  const texts: string[] = new Array(count);
  const lengths: number[] = new Array(count);
  let size = 1 + decimalLength(count) + 2;
  for (let i = 0; i < count; i++) {
    const arg = i === 0 ? name : args[i - 1]!;
    const text = typeof arg === 'string' ? arg : String(arg);
    const length = Buffer.byteLength(text);
    texts[i] = text;
    lengths[i] = length;
    size += 1 + decimalLength(length) + 2 + length + 2;
  }
  const out = Buffer.allocUnsafe(size);
  out[0] = 0x2a; // '*'
  let at = writeLine(out, 1, count);
  for (let i = 0; i < count; i++) {
    out[at++] = 0x24; // '$'
    at = writeLine(out, at, lengths[i]!);
    at += out.write(texts[i]!, at, 'utf8');
    out[at++] = CR;
    out[at++] = LF;
  }
  return out;
}

/** `n` in decimal, then CRLF; returns the offset after it. */
function writeLine(out: Buffer, at: number, n: number): number {
  at = writeDecimal(out, at, n);
  out[at] = CR;
  out[at + 1] = LF;
  return at + 2;
}
