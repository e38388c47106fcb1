import { describe, expect, it } from 'vitest';
import { RowBinaryWriter } from './row-binary.js';

const hex = (writer: RowBinaryWriter) => writer.bytes().toString('hex');

describe('RowBinaryWriter', () => {
  it('writes integers little-endian, UInt64 past 2^32', () => {
    expect(hex(new RowBinaryWriter().uint8(7).uint16(0x0102).uint32(0x01020304))).toBe(
      '07' + '0201' + '04030201',
    );
    expect(hex(new RowBinaryWriter().uint64(2 ** 32 + 5))).toBe('0500000001000000');
    expect(hex(new RowBinaryWriter().uint64(2 ** 53 - 1))).toBe('ffffffffffff1f00');
    expect(hex(new RowBinaryWriter().uint64(0))).toBe('0000000000000000');
    expect(hex(new RowBinaryWriter().uint64(2 ** 32 - 1))).toBe('ffffffff00000000');
    expect(() => new RowBinaryWriter().uint64(-1)).toThrow();
    expect(() => new RowBinaryWriter().uint64(2 ** 53)).toThrow();
  });

  it('grows the buffer for an integer one byte wider than the room left', () => {
    expect(hex(new RowBinaryWriter(1).uint8(1).uint8(2))).toBe('0102');
    expect(hex(new RowBinaryWriter(1).uint16(0x0102))).toBe('0201');
    expect(hex(new RowBinaryWriter(3).uint32(0x01020304))).toBe('04030201');
    expect(hex(new RowBinaryWriter(7).uint64(2 ** 32 + 5))).toBe('0500000001000000');
  });

  it('writes a string as its UTF-8 length, then its bytes, whatever the length', () => {
    for (const text of [
      '',
      'k',
      'clé',
      '数量-🚀',
      'x'.repeat(42),
      'x'.repeat(43),
      'é'.repeat(64),
      // 129 bytes from 43 characters: a length of two bytes, sized by the longest UTF-8 form
      '€'.repeat(43),
      '🚀'.repeat(40),
      'x'.repeat(300),
      // 5462 characters: at most 16386 bytes, a length of three bytes (the middle one exactly 128)
      '€'.repeat(5462),
    ]) {
      const bytes = new RowBinaryWriter(4).string(text).bytes();
      let length = 0;
      let at = 0;
      // at most 10 length bytes: a corrupt length fails here instead of reading on forever
      for (let scale = 1; at < 10; scale *= 128) {
        const byte = bytes[at++]!;
        length += (byte & 0x7f) * scale;
        if (byte < 0x80) break;
      }
      expect(length).toBe(Buffer.byteLength(text));
      expect(bytes.subarray(at).toString('utf8')).toBe(text);
    }
  });

  it('writes a UUID as its two halves, high first, each little-endian', () => {
    const bytes = new RowBinaryWriter().uuid('00112233-4455-6677-8899-aabbccddeeff').bytes();
    expect(bytes.toString('hex')).toBe('7766554433221100' + 'ffeeddccbbaa9988');
    // past the end of a small buffer: it grows first
    expect(hex(new RowBinaryWriter(4).uint16(0x0102).uuid('00112233-4455-6677-8899-aabbccddeeff'))).toBe(
      '0201' + '7766554433221100' + 'ffeeddccbbaa9988',
    );
    for (const bad of [
      '00112233-4455-6677-8899-aabbccddeefz',
      '00112233-4455-6677-8899-aabbccddeeff0',
      '00112233-4455-6677-8899-aabbccddeef',
      '00112233445566778899aabbccddeeff',
    ]) {
      expect(() => new RowBinaryWriter().uuid(bad), bad).toThrow(RangeError);
    }
  });

  it('writes a Decimal(38, 8) as the scaled value, a little-endian 128-bit integer', () => {
    const int128 = (value: bigint) => {
      const out = Buffer.alloc(16);
      out.writeBigUInt64LE(value & 0xffff_ffff_ffff_ffffn, 0);
      out.writeBigUInt64LE(value >> 64n, 8);
      return out.toString('hex');
    };
    const cases: [string, bigint][] = [
      ['0', 0n],
      ['1', 100_000_000n],
      ['0.00000001', 1n],
      ['0.5', 50_000_000n],
      ['9999999.99999999', 999_999_999_999_999n],
      ['10000000', 1_000_000_000_000_000n],
      // 16 digits: past 2^53, where a double would round
      ['90071992.54740993', 2n ** 53n + 1n],
      ['99999999.99999999', 9_999_999_999_999_999n],
      ['123456789.12345678', 12_345_678_912_345_678n],
      ['184467440737.09551616', 2n ** 64n],
      ['999999999999999999999999999999.99999999', 10n ** 38n - 1n],
    ];
    for (const [text, scaled] of cases) {
      expect(hex(new RowBinaryWriter(2).decimal128(text, 8)), text).toBe(int128(scaled));
    }
    // The buffer is not zero-filled (allocUnsafe): every byte of the value is written, the high half too.
    const dirty = new RowBinaryWriter(64);
    (dirty as unknown as { buffer: Buffer }).buffer.fill(0xab);
    expect(hex(dirty.decimal128('1', 8))).toBe(int128(100_000_000n));
    for (const bad of ['1e3', '-1', '0.123456789', '', '1.2.3', '1000000000000000000000000000000']) {
      expect(() => new RowBinaryWriter().decimal128(bad, 8), bad).toThrow();
    }
  });
});
