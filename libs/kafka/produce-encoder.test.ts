import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { crc32c, type ProduceRequestOptions, produceRequestBytes } from './produce-encoder.js';

/**
 * kafkajs' own v3 produce request, the reference the bytes are compared with (read, never
 * changed; kafkajs is pinned exactly in package.json, so a new version is a deliberate move).
 */
const kafkajsProduceRequestV3: (options: ProduceRequestOptions) => { encode(): Promise<{ buffer: Buffer }> } =
  createRequire(import.meta.url)('kafkajs/src/protocol/requests/produce/v3/request.js');

/** A seeded generator, so a failure names a case that can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function randomRequest(seed: number): ProduceRequestOptions {
  const next = random(seed);
  const pick = <T>(values: T[]): T => values[Math.floor(next() * values.length)]!;
  const text = () => pick(['', 'a', 'usage/1\n1\t2', 'é€😀', 'x'.repeat(200), 'y'.repeat(20_000)]);
  const bytes = () => pick([null, undefined, text(), Buffer.from(text())]);
  return {
    acks: pick([-1, 0, 1]),
    timeout: pick([5000, 30_000]),
    producerEpoch: pick([undefined, 0, 3]),
    topicData: Array.from({ length: 1 + Math.floor(next() * 3) }, (_, t) => ({
      topic: `topic-${t}-${pick(['usage.events', 'é'])}`,
      partitions: Array.from({ length: Math.floor(next() * 5) }, (_, partition) => ({
        partition,
        ...(next() < 0.3 ? { firstSequence: Math.floor(next() * 100) } : {}),
        messages: Array.from({ length: Math.floor(next() * 6) }, () => ({
          key: bytes() as string | null,
          value: bytes() as string | null,
          // Timestamps of different digit counts sort as text in kafkajs; that is kept too.
          ...(next() < 0.5 ? { timestamp: pick([1_700_000_000_000, 1_700_000_000_999, 999, 0]) } : {}),
        })),
      })),
    })),
  };
}

describe('produceRequestBytes against kafkajs', () => {
  afterEach(() => vi.restoreAllMocks());

  it('writes the bytes kafkajs writes, for every shape of request ingest can send', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_763_900_000_123);
    for (let seed = 1; seed <= 300; seed++) {
      const options = randomRequest(seed);
      const ours = produceRequestBytes(options)!.toString('hex');
      const theirs = (await kafkajsProduceRequestV3(options).encode()).buffer.toString('hex');
      expect(ours === theirs, `seed ${seed}`).toBe(true);
    }
  });

  it('writes lengths at each varint byte boundary as kafkajs does (zigzag 127, 128, 16383, 16384)', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_763_900_000_123);
    // a length n is written as zigzag 2n: 63 and 64 bytes sit either side of the first boundary
    for (const length of [63, 64, 8191, 8192]) {
      const options = {
        acks: -1,
        timeout: 1000,
        topicData: [
          {
            topic: 't',
            partitions: [{ partition: 0, messages: [{ key: null, value: 'v'.repeat(length) }] }],
          },
        ],
      };
      const ours = produceRequestBytes(options)?.toString('hex');
      const theirs = (await kafkajsProduceRequestV3(options).encode()).buffer.toString('hex');
      expect(ours === theirs, `value of ${length} bytes`).toBe(true);
    }
  });

  it('takes a null timestamp for none, as kafkajs does', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_763_900_000_123);
    const options = {
      acks: -1,
      timeout: 1000,
      topicData: [
        {
          topic: 't',
          partitions: [
            {
              partition: 0,
              messages: [
                { value: 'none', timestamp: null as unknown as number },
                { value: 'stamped', timestamp: 1_700_000_000_000 },
              ],
            },
          ],
        },
      ],
    };
    const ours = produceRequestBytes(options)?.toString('hex');
    const theirs = (await kafkajsProduceRequestV3(options).encode()).buffer.toString('hex');
    expect(ours).toBe(theirs);
  });
});

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
    expect(produceRequestBytes(options({ ...plain, headers: {} }))).toBeInstanceOf(Buffer);
    expect(produceRequestBytes(options(plain, { compression: 1 }))).toBeUndefined();
    expect(produceRequestBytes(options(plain, { transactionalId: 'tx' }))).toBeUndefined();
    expect(produceRequestBytes(options({ ...plain, timestamp: '1700000000000' }))).toBeUndefined();
    expect(produceRequestBytes(options(plain, { producerId: -1 }))).toBeInstanceOf(Buffer);
    expect(produceRequestBytes(options(plain, { producerId: 7, producerEpoch: 1 }))).toBeUndefined();
    expect(produceRequestBytes(options({ key: 5, value: 'v' }))).toBeUndefined();
    expect(produceRequestBytes(options({ ...plain, timestamp: 1_700_000_000_000.5 }))).toBeUndefined();
    const sequenced = (firstSequence: number) => ({
      acks: -1,
      timeout: 1000,
      topicData: [{ topic: 't', partitions: [{ partition: 0, firstSequence, messages: [plain] }] }],
    });
    expect(produceRequestBytes(sequenced(3))).toBeInstanceOf(Buffer);
    expect(produceRequestBytes(sequenced(1.5))).toBeUndefined();
    expect(produceRequestBytes(options({ key: 'k', value: { n: 1 } }))).toBeUndefined();
  });
});

describe('produceRequestBytes timestamps', () => {
  /** One partition's messages, one per timestamp. */
  const batch = (timestamps: number[]) => ({
    acks: -1,
    timeout: 1000,
    topicData: [
      {
        topic: 't',
        partitions: [{ partition: 0, messages: timestamps.map((timestamp) => ({ value: 'v', timestamp })) }],
      },
    ],
  });

  it('refuses timestamps further apart in one batch than it encodes exactly (2^51 ms)', () => {
    expect(produceRequestBytes(batch([1, 1 + 2 ** 51]))).toBeInstanceOf(Buffer);
    expect(() => produceRequestBytes(batch([1, 2 + 2 ** 51]))).toThrow(/out of range/);
  });

  it("refuses a message 2^51 ms before the batch's first timestamp too (sorted as text, it can be)", () => {
    // "2251799813685257" sorts before "9" and "8": the batch starts at 9 + 2^51, the others fall before it
    expect(produceRequestBytes(batch([9, 9 + 2 ** 51]))).toBeInstanceOf(Buffer);
    expect(() => produceRequestBytes(batch([8, 9 + 2 ** 51]))).toThrow(/out of range/);
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
