import { randomFillSync } from 'node:crypto';

/** Random bytes are drawn this many ids at a time: one system call for many keys. */
const IDS_PER_DRAW = 256;
const RANDOM_BYTES_PER_ID = 10;
const pool = Buffer.alloc(IDS_PER_DRAW * RANDOM_BYTES_PER_ID);
let offset = pool.length;

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Keys made in time order
 * sort in time order, which keeps the service's idempotency index appending rather than
 * scattering, and 74 random bits per millisecond make two equal keys practically impossible.
 */
export function uuidv7(nowMs: number = Date.now()): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const r = offset;
  offset += RANDOM_BYTES_PER_ID;
  // 48 bits of time as 12 hex digits: the high 16 bits and the low 32, each exact in a double.
  const high = Math.floor(nowMs / 2 ** 32);
  const low = nowMs >>> 0;
  const time = high.toString(16).padStart(4, '0') + low.toString(16).padStart(8, '0');
  return (
    `${time.slice(0, 8)}-${time.slice(8, 12)}-` +
    // version 7 in the high nibble, then 12 random bits
    `7${HEX[pool[r]! & 0x0f]!.slice(1)}${HEX[pool[r + 1]!]}-` +
    // variant 10 in the two high bits, then 62 random bits
    `${HEX[(pool[r + 2]! & 0x3f) | 0x80]}${HEX[pool[r + 3]!]}-` +
    `${HEX[pool[r + 4]!]}${HEX[pool[r + 5]!]}${HEX[pool[r + 6]!]}${HEX[pool[r + 7]!]}${HEX[pool[r + 8]!]}${HEX[pool[r + 9]!]}`
  );
}
