import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKafka } from './client.js';
import { encodeProduceRequest, ownProduceEncoderInUse } from './produce-encoder.js';

const require = createRequire(import.meta.url);
type Request = { apiVersion: number; expectResponse(): boolean; encode(): Promise<{ buffer: Buffer }> };
type Options = Parameters<typeof encodeProduceRequest>[0];
// kafkajs' own v3 encoder, whatever the module cache holds now (the test loads the file afresh).
const kafkajsV3 = (() => {
  const path = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js');
  const cached = require.cache[path];
  delete require.cache[path];
  const fresh = require(path) as (options: Options) => Request;
  if (cached) require.cache[path] = cached;
  return fresh;
})();

/** A seeded generator, so a failure names a case that can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function randomRequest(seed: number): Options {
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

async function bytesOf(request: Request): Promise<string> {
  return (await request.encode()).buffer.toString('hex');
}

describe('encodeProduceRequest', () => {
  afterEach(() => vi.restoreAllMocks());

  it('writes the bytes kafkajs writes, for every shape of request ingest can send', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_763_900_000_123);
    for (let seed = 1; seed <= 300; seed++) {
      const options = randomRequest(seed);
      const [ours, theirs] = [encodeProduceRequest(options), kafkajsV3(options)];
      expect((await bytesOf(ours)) === (await bytesOf(theirs)), `seed ${seed}`).toBe(true);
      expect(ours.expectResponse()).toBe(theirs.expectResponse());
      expect(ours.apiVersion).toBe(3);
    }
  });

  it('leaves what it does not encode (headers, compression, transactions) to kafkajs', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_763_900_000_123);
    const message = { key: 'k', value: 'v', headers: { trace: 'abc' } };
    const options = {
      acks: -1,
      timeout: 1000,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [message] }] }],
    };
    for (const variant of [options, { ...options, compression: 1 }, { ...options, transactionalId: 'tx' }]) {
      expect(await bytesOf(encodeProduceRequest(variant))).toBe(await bytesOf(kafkajsV3(variant)));
    }
  });

  it('is what kafkajs uses once a client is created', () => {
    createKafka({ brokers: ['127.0.0.1:1'], clientId: 'test' });
    expect(ownProduceEncoderInUse()).toBe(true);
  });
});
