import { createRequire } from 'node:module';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createKafka } from './client.js';
import {
  installKafkajsAdapter,
  KAFKAJS_VERSION,
  kafkajsAsShipped,
  ownProduceEncoderInUse,
  produceRequest,
} from './kafkajs-adapter.js';
import type { ProduceRequestOptions } from './produce-encoder.js';

/**
 * The guard of the one adapter that reaches into kafkajs (kafkajs-adapter.ts). If one of these
 * fails, kafkajs changed under the adapter: read its changes before moving the pin.
 */
const require = createRequire(import.meta.url);
type Request = { apiVersion: number; expectResponse(): boolean; encode(): Promise<{ buffer: Buffer }> };

async function bytesOf(request: Request): Promise<string> {
  return (await request.encode()).buffer.toString('hex');
}

describe('kafkajs, as the adapter uses it', () => {
  it('is the pinned version, pinned exactly', () => {
    expect(require('kafkajs/package.json').version).toBe(KAFKAJS_VERSION);
    expect(require('../../package.json').dependencies.kafkajs).toBe(KAFKAJS_VERSION);
  });

  it('has the internals the adapter touches, of the shape it expects', () => {
    const Encoder = require('kafkajs/src/protocol/encoder.js');
    expect(typeof Encoder).toBe('function');
    expect(typeof Encoder.nextPowerOfTwo).toBe('function');
    expect(typeof Encoder.prototype.ensureAvailable).toBe('function');
    const encoder = new Encoder();
    expect(Buffer.isBuffer(encoder.buf)).toBe(true);
    expect(encoder.offset).toBe(0);
    // `buffer` is the bytes written so far: what the adapter relies on for its pre-encoded body
    encoder.buf = Buffer.from('abcdef');
    encoder.offset = 3;
    expect(encoder.buffer.toString()).toBe('abc');
    // v4-v7 produce requests are v3's with another apiVersion, loaded through require
    expect(typeof kafkajsAsShipped.produceRequestV3).toBe('function');
    for (const version of [4, 5, 6, 7]) {
      const source = require('node:fs').readFileSync(
        require.resolve(`kafkajs/src/protocol/requests/produce/v${version}/request.js`),
        'utf8',
      ) as string;
      expect(source, `produce v${version}`).toMatch(/require\('\.\.\/v[3-6]\/request'\)/);
    }
  });

  it('refuses another version at install, loudly', () => {
    const manifest = require('kafkajs/package.json') as { version: string };
    const pinned = manifest.version;
    manifest.version = '2.3.0';
    try {
      expect(() => installKafkajsAdapter()).toThrow(/kafkajs 2\.3\.0 is installed/);
    } finally {
      manifest.version = pinned;
    }
  });
});

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
          ...(next() < 0.1 ? { headers: {} } : {}),
        })),
      })),
    })),
  };
}

describe('the produce encoder, through the adapter', () => {
  afterEach(() => vi.restoreAllMocks());

  it('writes the bytes kafkajs writes, for every shape of request ingest can send', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_763_900_000_123);
    for (let seed = 1; seed <= 300; seed++) {
      const options = randomRequest(seed);
      const [ours, theirs] = [produceRequest(options), kafkajsAsShipped.produceRequestV3(options)];
      expect((await bytesOf(ours)) === (await bytesOf(theirs)), `seed ${seed}`).toBe(true);
      expect(ours.expectResponse()).toBe(theirs.expectResponse());
      expect(ours.apiVersion).toBe(3);
    }
  });

  it('leaves what it does not encode (headers, compression, transactions, producer ids) to kafkajs', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_763_900_000_123);
    const message = { key: 'k', value: 'v', headers: { trace: 'abc' } };
    const options = {
      acks: -1,
      timeout: 1000,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [message] }] }],
    };
    const plain = {
      ...options,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [{ key: 'k', value: 'v' }] }] }],
    };
    const Long = require('kafkajs/src/utils/long');
    for (const variant of [
      options,
      { ...options, compression: 1 },
      { ...options, transactionalId: 'tx' },
      // an idempotent producer: its id and epoch, which this encoder would write as -1
      { ...plain, producerId: Long.fromInt(7), producerEpoch: 1 },
    ]) {
      expect(await bytesOf(produceRequest(variant))).toBe(
        await bytesOf(kafkajsAsShipped.produceRequestV3(variant)),
      );
    }
  });

  it('is what kafkajs uses once a client is created', () => {
    createKafka({ brokers: ['127.0.0.1:1'], clientId: 'test' });
    expect(ownProduceEncoderInUse()).toBe(true);
  });
});

type AnyRequest = (options: object) => Request;
/** Requests of every size class: empty values, one small message, many partitions, a value past 64 KB. */
function requestsOfEverySize(): Request[] {
  // kafkajs' own produce encoder, so its Encoders (the pooled buffers) do the work
  const produce = kafkajsAsShipped.produceRequestV3 as unknown as AnyRequest;
  const metadata: AnyRequest = require('kafkajs/src/protocol/requests/metadata/v4/request.js');
  const message = (value: string | null, key?: string) => ({ key, value, timestamp: 1_700_000_000_000 });
  return [
    metadata({ topics: ['usage.events'], allowAutoTopicCreation: true }),
    produce({
      acks: -1,
      timeout: 30_000,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [message('')] }] }],
    }),
    produce({
      acks: -1,
      timeout: 30_000,
      topicData: [
        {
          topic: 'usage.events',
          partitions: Array.from({ length: 24 }, (_, partition) => ({
            partition,
            messages: Array.from({ length: partition }, (_, i) =>
              message(`événement ${i}\t`.repeat(i), `k${i}`),
            ),
          })),
        },
      ],
    }),
    produce({
      acks: 1,
      timeout: 5000,
      topicData: [
        {
          topic: 'big',
          partitions: [{ partition: 3, messages: [message('x'.repeat(70_000)), message(null)] }],
        },
      ],
    }),
  ];
}

async function encodeAll(): Promise<string[]> {
  return Promise.all(requestsOfEverySize().map(bytesOf));
}

describe('pooled Encoder buffers', () => {
  afterAll(() => {
    installKafkajsAdapter();
    vi.restoreAllMocks();
  });

  it('put the same bytes on the wire as kafkajs does with its own zero-filled buffers', async () => {
    // A partition without messages is stamped with the time: the same time for both encodings.
    vi.spyOn(Date, 'now').mockReturnValue(1_700_000_000_000);
    kafkajsAsShipped.restoreEncoder();
    const expected = await encodeAll();
    installKafkajsAdapter();
    // Dirty the shared pool first, so a byte the adapter failed to write would show.
    Buffer.allocUnsafe(4000).fill(0xab);
    const pooled = await encodeAll();
    // Compared one by one: a mismatch prints two hex strings, not four.
    for (let i = 0; i < expected.length; i++) expect(pooled[i] === expected[i], `request ${i}`).toBe(true);
    expect(pooled[2]!.length).toBeGreaterThan(1000);
  });
});
