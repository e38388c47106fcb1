import { describe, expect, it } from 'vitest';
import { crc32c, produceRequestBytes } from './produce-encoder.js';

// Byte-for-byte agreement with kafkajs' own encoder is checked in kafkajs-adapter.test.ts.
describe('produceRequestBytes', () => {
  it('leaves what it does not encode (headers, compression, transactions, producer ids) to kafkajs', () => {
    const plain = { key: 'k', value: 'v' };
    const options = (message: object, extra: object = {}) => ({
      acks: -1,
      timeout: 1000,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [message as typeof plain] }] }],
      ...extra,
    });
    expect(produceRequestBytes(options(plain))).toBeInstanceOf(Buffer);
    expect(produceRequestBytes(options({ ...plain, headers: { trace: 'abc' } }))).toBeUndefined();
    expect(produceRequestBytes(options(plain, { compression: 1 }))).toBeUndefined();
    expect(produceRequestBytes(options(plain, { transactionalId: 'tx' }))).toBeUndefined();
    expect(produceRequestBytes(options({ ...plain, timestamp: '1700000000000' }))).toBeUndefined();
    expect(produceRequestBytes(options(plain, { producerId: -1 }))).toBeInstanceOf(Buffer);
    expect(produceRequestBytes(options(plain, { producerId: 7, producerEpoch: 1 }))).toBeUndefined();
    expect(produceRequestBytes(options({ key: 5, value: 'v' }))).toBeUndefined();
    expect(produceRequestBytes(options({ key: 'k', value: { n: 1 } }))).toBeUndefined();
  });
});

describe('crc32c', () => {
  it('is CRC-32C (Castagnoli): the check value of "123456789", and of a slice', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32c(Buffer.from('xx123456789y'), 2, 11)).toBe(0xe3069283);
    expect(crc32c(Buffer.alloc(0))).toBe(0);
  });

  it('agrees with the bit-at-a-time definition at every length and offset around its 8-byte steps', () => {
    const bitwise = (bytes: Uint8Array, start: number, end: number) => {
      let crc = 0xffffffff;
      for (let i = start; i < end; i++) {
        crc ^= bytes[i]!;
        for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
      }
      return (crc ^ 0xffffffff) >>> 0;
    };
    const bytes = Buffer.from(Array.from({ length: 80 }, (_, n) => (n * 151 + 7) & 0xff));
    for (let start = 0; start < 9; start++) {
      for (let end = start; end <= bytes.length; end++) {
        expect(crc32c(bytes, start, end), `${start}..${end}`).toBe(bitwise(bytes, start, end));
      }
    }
  });
});
