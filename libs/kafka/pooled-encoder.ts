import { createRequire } from 'node:module';

interface KafkaEncoderClass {
  nextPowerOfTwo(value: number): number;
  prototype: { ensureAvailable(this: KafkaEncoderInstance, length: number): void };
}

interface KafkaEncoderInstance {
  buf: Buffer;
  offset: number;
}

const Encoder: KafkaEncoderClass = createRequire(import.meta.url)('kafkajs/src/protocol/encoder.js');
const original = {
  nextPowerOfTwo: Encoder.nextPowerOfTwo,
  ensureAvailable: Encoder.prototype.ensureAvailable,
};

/**
 * kafkajs 2.2.4 (its last release) encodes every request through `Encoder`s that start with a
 * zero-filled 512-byte `Buffer.alloc` and grow with more of them: a produce call makes several per
 * partition, each its own malloc'd ArrayBuffer for the GC to track and free, which was most of the
 * ingest service's produce cost (measured: 22 µs per partition of a produce request). Pooled
 * buffers (`Buffer.allocUnsafe`, carved from Node's shared slab) are safe here because an Encoder
 * writes strictly at its offset and only ever hands out the bytes it wrote (`buf.slice(0, offset)`),
 * so the bytes on the wire are the same; pooled-encoder.test.ts compares them with the original. Starting
 * empty skips the first allocation for the many Encoders that hold a few bytes.
 */
export function usePooledKafkaEncoderBuffers(enabled = true): void {
  if (!enabled) {
    Encoder.nextPowerOfTwo = original.nextPowerOfTwo;
    Encoder.prototype.ensureAvailable = original.ensureAvailable;
    return;
  }
  // Only the constructor asks with its default 511; the patched ensureAvailable sizes by itself.
  Encoder.nextPowerOfTwo = () => 0;
  Encoder.prototype.ensureAvailable = function ensureAvailable(length) {
    const needed = this.offset + length;
    if (needed <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(64, original.nextPowerOfTwo(needed)));
    this.buf.copy(grown, 0, 0, this.offset);
    this.buf = grown;
  };
}
