/**
 * Rows in ClickHouse's RowBinary format, written into one growing buffer: each value in its
 * column's binary form, in the order of the INSERT's columns, nothing between them. ClickHouse
 * reads it with no text parsing (18.16 included), and the caller builds no strings per row.
 * Integers are little-endian; a String is a LEB128 length and its UTF-8 bytes; a UUID is its two
 * 64-bit halves, high first, each little-endian; a Decimal(38, s) is the value times 10^s as a
 * little-endian signed 128-bit integer; a DateTime is UInt32 seconds.
 */
export class RowBinaryWriter {
  private buffer: Buffer;
  private at = 0;

  constructor(initialBytes = 64 * 1024) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  /** The rows written so far (a view of the writer's buffer). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.at);
  }

  uint8(value: number): this {
    this.room(1);
    this.buffer[this.at++] = value;
    return this;
  }

  uint16(value: number): this {
    this.room(2);
    this.at = this.buffer.writeUInt16LE(value, this.at);
    return this;
  }

  uint32(value: number): this {
    this.room(4);
    this.at = this.buffer.writeUInt32LE(value, this.at);
    return this;
  }

  /** A UInt64 from a non-negative safe integer. */
  uint64(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`not a UInt64: ${value}`);
    this.room(8);
    this.at = this.buffer.writeUInt32LE(value % 2 ** 32, this.at);
    this.at = this.buffer.writeUInt32LE(Math.floor(value / 2 ** 32), this.at);
    return this;
  }

  string(value: string): this {
    const most = 3 * value.length;
    this.room(10 + most);
    // the length goes first, in as many bytes as the longest UTF-8 form needs (padded LEB128)
    let lengthBytes = 1;
    for (let n = most; n >= 0x80; n = Math.floor(n / 0x80)) lengthBytes++;
    const written = this.buffer.write(value, this.at + lengthBytes, 'utf8');
    let n = written;
    for (let i = 0; i < lengthBytes - 1; i++) {
      this.buffer[this.at + i] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buffer[this.at + lengthBytes - 1] = n;
    this.at += lengthBytes + written;
    return this;
  }

  /** A UUID from its text (8-4-4-4-12 hex digits). */
  uuid(text: string): this {
    if (text.length !== 36) throw new RangeError(`not a UUID: ${text}`);
    this.room(16);
    const hex =
      text.slice(0, 8) + text.slice(9, 13) + text.slice(14, 18) + text.slice(19, 23) + text.slice(24);
    const half = Buffer.from(hex, 'hex');
    if (half.length !== 16) throw new RangeError(`not a UUID: ${text}`);
    for (let i = 0; i < 8; i++) this.buffer[this.at + i] = half[7 - i]!;
    for (let i = 0; i < 8; i++) this.buffer[this.at + 8 + i] = half[15 - i]!;
    this.at += 16;
    return this;
  }

  /**
   * A Decimal(38, `scale`) from its exact text (digits, an optional point and at most `scale`
   * fractional digits; non-negative).
   */
  decimal128(text: string, scale: number): this {
    const point = text.indexOf('.');
    const whole = point < 0 ? text : text.slice(0, point);
    const fraction = point < 0 ? '' : text.slice(point + 1);
    if (!/^\d+$/.test(whole) || !/^\d*$/.test(fraction) || fraction.length > scale) {
      throw new RangeError(`not a Decimal(38, ${scale}): ${text}`);
    }
    const digits = whole + fraction.padEnd(scale, '0');
    this.room(16);
    if (digits.length <= 15) {
      // below 2^53: exact as a number, and the high 64 bits are zero
      const value = Number(digits);
      this.buffer.writeUInt32LE(value % 2 ** 32, this.at);
      this.buffer.writeUInt32LE(Math.floor(value / 2 ** 32), this.at + 4);
      this.buffer.fill(0, this.at + 8, this.at + 16);
    } else {
      const value = BigInt(digits);
      if (value >= 10n ** 38n) throw new RangeError(`not a Decimal(38, ${scale}): ${text}`);
      this.buffer.writeBigUInt64LE(value & 0xffff_ffff_ffff_ffffn, this.at);
      this.buffer.writeBigUInt64LE(value >> 64n, this.at + 8);
    }
    this.at += 16;
    return this;
  }

  private room(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.buffer.length, this.at + bytes));
    this.buffer.copy(grown, 0, 0, this.at);
    this.buffer = grown;
  }
}
