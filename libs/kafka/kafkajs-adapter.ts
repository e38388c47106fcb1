import { createRequire } from 'node:module';
import { type ProduceRequestOptions, produceRequestBytes } from './produce-encoder.js';

/*
 * The one place that reaches into kafkajs' internals; nothing else in the project does.
 *
 * What it replaces: kafkajs encodes every request through chains of `Encoder`s, each starting
 * from a zero-filled `Buffer.alloc` and growing by more of them, with object spreads and awaits
 * per partition and per record. For a produce request that was the largest single cost of an
 * ingest request. kafkajs has no public way to supply an encoder or a buffer allocator, and has
 * had no release since 2.2.4 (2023); its maintainers' own attempt at a cheaper encoder buffer
 * was never merged (https://github.com/tulios/kafkajs/pull/475; the issue behind it,
 * https://github.com/tulios/kafkajs/issues/383, was closed with a narrower fix).
 * @platformatic/kafka, the maintained alternative, fails against our Kafka test broker
 * (docs/decisions.md). So, at `createKafka`:
 * - produce requests go through our one-pass encoder (produce-encoder.ts, pure): the v3 request
 *   module in kafkajs' module cache is replaced, and v4-v7 (which wrap v3) pick it up when they
 *   first load; what our encoder does not handle goes to kafkajs' own v3 function unchanged;
 * - every other Encoder draws its buffers from Node's pool (`Buffer.allocUnsafe`) instead of
 *   zero-filled allocations. Safe because an Encoder writes strictly at its offset and only ever
 *   hands out the bytes it wrote (`buf.slice(0, offset)`): the bytes on the wire are the same.
 *
 * What it relies on, in kafkajs 2.2.4 (pinned exactly in package.json):
 * `src/protocol/requests/produce/v3/request.js` (a function of the options, loaded through
 * require, which v4-v7 call), `src/protocol/encoder.js` (a class with `buf` and `offset`, static
 * `nextPowerOfTwo` and `prototype.ensureAvailable`, and a `buffer` getter that slices them).
 * kafkajs-adapter.test.ts fails loudly as soon as any of it changes, and `installKafkajsAdapter`
 * throws on another version: there is no silent fallback to a slower path.
 */

export const KAFKAJS_VERSION = '2.2.4';

const require = createRequire(import.meta.url);

interface KafkaRequest {
  apiKey: number;
  apiVersion: number;
  apiName: string;
  expectResponse: () => boolean;
  /** A kafkajs Encoder: `buffer` holds the bytes written. */
  encode: () => Promise<{ buffer: Buffer }>;
}

type ProduceRequest = (options: ProduceRequestOptions) => KafkaRequest;

interface EncoderInstance {
  buf: Buffer;
  offset: number;
  readonly buffer: Buffer;
}

interface EncoderClass {
  new (): EncoderInstance;
  nextPowerOfTwo(value: number): number;
  prototype: { ensureAvailable(this: EncoderInstance, length: number): void };
}

const V3_PATH = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js');
const V7_PATH = require.resolve('kafkajs/src/protocol/requests/produce/v7/request.js');
const Encoder: EncoderClass = require('kafkajs/src/protocol/encoder.js');
/** kafkajs' own v3 produce request, as loaded before it is replaced. */
const kafkajsProduceRequestV3: ProduceRequest = require(V3_PATH);
const originalEncoder = {
  nextPowerOfTwo: Encoder.nextPowerOfTwo,
  ensureAvailable: Encoder.prototype.ensureAvailable,
};

/** Marks the requests encoded here, so a test can tell that kafkajs uses this encoder. */
const ENCODED_HERE = Symbol.for('billing.kafka.produce-encoder');
const PRODUCE_API_KEY = 0;

/** What kafkajs' v3 produce module answers once the adapter is installed. */
export function produceRequest(options: ProduceRequestOptions): KafkaRequest {
  const bytes = produceRequestBytes(options);
  if (!bytes) return kafkajsProduceRequestV3(options);
  const { acks } = options;
  return {
    apiKey: PRODUCE_API_KEY,
    apiVersion: 3,
    apiName: 'Produce',
    expectResponse: () => acks !== 0,
    encode: async () => {
      const encoder = new Encoder();
      encoder.buf = bytes;
      encoder.offset = bytes.length;
      return encoder;
    },
    [ENCODED_HERE]: true,
  } as KafkaRequest;
}

function installedVersion(): string {
  return (require('kafkajs/package.json') as { version: string }).version;
}

/**
 * Installs both workarounds (idempotent). Must run before kafkajs first loads its v4-v7 produce
 * modules (they keep the v3 function they found): createKafka calls it before making a client.
 */
export function installKafkajsAdapter(): void {
  const version = installedVersion();
  if (version !== KAFKAJS_VERSION) {
    throw new Error(
      `kafkajs ${version} is installed; libs/kafka/kafkajs-adapter.ts was written for ${KAFKAJS_VERSION}. ` +
        'Check its internals (kafkajs-adapter.test.ts), then move the pin.',
    );
  }
  const cached = require.cache[V3_PATH];
  if (cached && cached.exports !== produceRequest) cached.exports = produceRequest;
  usePooledEncoderBuffers();
}

function usePooledEncoderBuffers(): void {
  // Only the constructor asks with its default 511; the replaced ensureAvailable sizes by itself,
  // so an Encoder starts empty and the many that hold a few bytes skip their first allocation.
  Encoder.nextPowerOfTwo = () => 0;
  Encoder.prototype.ensureAvailable = function ensureAvailable(length) {
    const needed = this.offset + length;
    if (needed <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(64, originalEncoder.nextPowerOfTwo(needed)));
    this.buf.copy(grown, 0, 0, this.offset);
    this.buf = grown;
  };
}

/** For the adapter's test: kafkajs exactly as it ships, and back. */
export const kafkajsAsShipped = {
  produceRequestV3: kafkajsProduceRequestV3,
  /** Gives the Encoder back its own zero-filled buffers (the test's reference). */
  restoreEncoder(): void {
    Encoder.nextPowerOfTwo = originalEncoder.nextPowerOfTwo;
    Encoder.prototype.ensureAvailable = originalEncoder.ensureAvailable;
  },
};

/** Whether kafkajs' newest produce version (the one it negotiates with Kafka 1.0+) goes through here. */
export function ownProduceEncoderInUse(): boolean {
  const requestV7: ProduceRequest = require(V7_PATH);
  const request = requestV7({ acks: -1, timeout: 1, topicData: [] }) as KafkaRequest & {
    [ENCODED_HERE]?: boolean;
  };
  return request[ENCODED_HERE] === true && request.apiVersion === 7;
}
