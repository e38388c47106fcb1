import { createRequire } from 'node:module';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { usePooledKafkaEncoderBuffers } from './pooled-encoder.js';

const require = createRequire(import.meta.url);
type Request = { encode(): Promise<{ buffer: Buffer }> };
const produce: (options: object) => Request = require('kafkajs/src/protocol/requests/produce/v3/request.js');
const metadata: (
  options: object,
) => Request = require('kafkajs/src/protocol/requests/metadata/v4/request.js');

/** Requests of every size class: empty values, one small message, many partitions, a value past 64 KB. */
function requests(): Request[] {
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
  return Promise.all(requests().map(async (request) => (await request.encode()).buffer.toString('hex')));
}

describe('usePooledKafkaEncoderBuffers', () => {
  afterAll(() => {
    usePooledKafkaEncoderBuffers();
    vi.restoreAllMocks();
  });

  it('puts the same bytes on the wire as kafkajs does with its own zero-filled buffers', async () => {
    // A partition without messages is stamped with the time: the same time for both encodings.
    vi.spyOn(Date, 'now').mockReturnValue(1_700_000_000_000);
    usePooledKafkaEncoderBuffers(false);
    const expected = await encodeAll();
    usePooledKafkaEncoderBuffers();
    // Dirty the shared pool first, so a byte the patch failed to write would show.
    Buffer.allocUnsafe(4000).fill(0xab);
    const pooled = await encodeAll();
    // Compared one by one: a mismatch prints two hex strings, not four.
    for (let i = 0; i < expected.length; i++) expect(pooled[i] === expected[i], `request ${i}`).toBe(true);
    expect(pooled[2]!.length).toBeGreaterThan(1000);
  });
});
