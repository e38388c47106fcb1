import { randomFillSync } from 'node:crypto';

/** Ids made per refill: one call for random bytes per this many events. */
const IDS_PER_REFILL = 256;
const ID_LENGTH = 36;
/** The id's first 13 characters: the 48-bit Unix time in ms as `xxxxxxxx-xxxx`. */
const STAMP_LENGTH = 13;
/** Random bytes per id: bytes 6..15 of the UUID, the version and variant bits set over them. */
const RANDOM_BYTES = 10;
const LATEST_MS = 2 ** 48 - 1;
const HEX = Buffer.from('0123456789abcdef');

const random = Buffer.allocUnsafe(RANDOM_BYTES * IDS_PER_REFILL);
const text = Buffer.allocUnsafe(ID_LENGTH * IDS_PER_REFILL);
const stamp = Buffer.allocUnsafe(STAMP_LENGTH);
let stampedMs = -1;
let next = IDS_PER_REFILL;

/**
 * A version 7 UUID (RFC 9562) for a usage event made at `nowMs`: the time in its first 48 bits,
 * then 74 random bits. Ids made later sort after ids made earlier (within a millisecond, in no
 * order), so each insert into Postgres' primary key lands on the index's right edge instead of a
 * random page: fewer pages read, dirtied and written whole to the WAL per event (docs/decisions.md,
 * "Usage event ids carry their time"). The id is one flat string, written into a buffer: joining
 * pieces with `+` leaves a chain V8 copies (flattens) when the id is first written out.
 */
export function newEventId(nowMs: number): string {
  if (!Number.isSafeInteger(nowMs) || nowMs < 0 || nowMs > LATEST_MS) {
    throw new RangeError(`an event id's time must be whole ms in 0..2^48-1, not ${nowMs}`);
  }
  if (next === IDS_PER_REFILL) refill();
  const at = next++ * ID_LENGTH;
  if (nowMs !== stampedMs) writeStamp(nowMs);
  stamp.copy(text, at);
  return text.toString('latin1', at, at + ID_LENGTH);
}

function writeStamp(ms: number): void {
  // 48 bits as two 24-bit halves: JS bit operators work on 32 bits
  const high = Math.floor(ms / 2 ** 24);
  const low = ms % 2 ** 24;
  for (let digit = 0; digit < 6; digit++) {
    stamp[digit] = HEX[(high >> (20 - 4 * digit)) & 0x0f]!;
  }
  for (let digit = 0; digit < 6; digit++) {
    // the dash after the eighth hex digit
    stamp[digit < 2 ? 6 + digit : 7 + digit] = HEX[(low >> (20 - 4 * digit)) & 0x0f]!;
  }
  stamp[8] = 0x2d; // '-'
  stampedMs = ms;
}

/** Writes every slot's random part (from its 14th character on); the stamp goes in per id. */
function refill(): void {
  randomFillSync(random);
  for (let i = 0; i < IDS_PER_REFILL; i++) {
    const bytes = i * RANDOM_BYTES;
    random[bytes] = (random[bytes]! & 0x0f) | 0x70; // version 7
    random[bytes + 2] = (random[bytes + 2]! & 0x3f) | 0x80; // RFC 9562 variant
    let at = i * ID_LENGTH + STAMP_LENGTH;
    for (let b = 0; b < RANDOM_BYTES; b++) {
      // UUID bytes 6, 8 and 10 each start a group
      if (b === 0 || b === 2 || b === 4) text[at++] = 0x2d; // '-'
      const byte = random[bytes + b]!;
      text[at++] = HEX[byte >> 4]!;
      text[at++] = HEX[byte & 0x0f]!;
    }
  }
  next = 0;
}
