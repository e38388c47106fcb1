/*
 * Produce requests (v3) encoded in ONE pass into ONE buffer, byte for byte as kafkajs 2.2.4
 * encodes them (produce-encoder.test.ts compares the two). Pure: direct-producer.ts sends these
 * bytes. Only what ingest sends is encoded (no compression, no transaction, no idempotent
 * producer id, no headers, integer timestamps); for anything else `produceRequestBytes` answers
 * undefined and the call goes through kafkajs' producer.
 */

export interface ProduceMessage {
  key?: Buffer | string | null;
  value: Buffer | string | null;
  timestamp?: number | string;
  headers?: Record<string, unknown>;
}

export interface ProduceRequestOptions {
  acks: number;
  timeout: number;
  transactionalId?: string | null;
  producerId?: unknown;
  producerEpoch?: number;
  compression?: number;
  topicData: {
    topic: string;
    partitions: { partition: number; firstSequence?: number; messages: ProduceMessage[] }[];
  }[];
}

const MAGIC_BYTE = 2;
const RECORD_BATCH_OVERHEAD = 61; // firstOffset .. record count, before the records
const MAX_SAFE_DELTA = 2 ** 51;

/** The body of a v3 produce request, or undefined when the request needs what is not encoded here. */
export function produceRequestBytes(options: ProduceRequestOptions): Buffer | undefined {
  if (!canEncodeHere(options)) return undefined;
  return writeRequest(options.acks, options.timeout, options.producerEpoch ?? 0, options.topicData);
}

function canEncodeHere(options: ProduceRequestOptions): boolean {
  if (options.transactionalId != null || (options.compression ?? 0) !== 0) return false;
  if (options.producerId != null && String(options.producerId) !== '-1') return false;
  for (const { partitions } of options.topicData) {
    for (const { messages, firstSequence } of partitions) {
      if (firstSequence !== undefined && !Number.isInteger(firstSequence)) return false;
      for (const message of messages) {
        if (message.headers && Object.keys(message.headers).length > 0) return false;
        if (message.timestamp != null && !Number.isSafeInteger(message.timestamp)) return false;
        if (!isBytes(message.key) || !isBytes(message.value)) return false;
      }
    }
  }
  return true;
}

function isBytes(value: unknown): boolean {
  return value == null || typeof value === 'string' || Buffer.isBuffer(value);
}

interface RecordPlan {
  key: Buffer | string | null | undefined;
  keyLength: number;
  value: Buffer | string | null | undefined;
  valueLength: number;
  timestampDelta: number;
  bodyLength: number;
}

interface PartitionPlan {
  partition: number;
  firstSequence: number;
  firstTimestamp: number;
  maxTimestamp: number;
  records: RecordPlan[];
  /** From partitionLeaderEpoch to the last record: what the batch's length field counts. */
  batchLength: number;
}

function writeRequest(
  acks: number,
  timeout: number,
  producerEpoch: number,
  topicData: ProduceRequestOptions['topicData'],
): Buffer {
  // Pass 1: every length, so the request is written once into a buffer of its exact size.
  let size = 2 + 2 + 4 + 4; // null transactional id, acks, timeout, topic count
  const topics = topicData.map(({ topic, partitions }) => {
    const topicLength = Buffer.byteLength(topic);
    size += 2 + topicLength + 4;
    const plans = partitions.map((data) => {
      const plan = planPartition(data);
      size += 4 + 4 + 8 + 4 + plan.batchLength; // partition, record set size, firstOffset, length
      return plan;
    });
    return { topic, topicLength, plans };
  });

  // Pass 2: the bytes.
  const out = Buffer.allocUnsafe(size);
  let at = out.writeInt16BE(-1, 0);
  at = out.writeInt16BE(acks, at);
  at = out.writeInt32BE(timeout, at);
  at = out.writeInt32BE(topics.length, at);
  for (const { topic, topicLength, plans } of topics) {
    at = out.writeInt16BE(topicLength, at);
    at += out.write(topic, at, 'utf8');
    at = out.writeInt32BE(plans.length, at);
    for (const plan of plans) {
      at = out.writeInt32BE(plan.partition, at);
      at = out.writeInt32BE(8 + 4 + plan.batchLength, at);
      at = out.writeBigInt64BE(0n, at); // firstOffset
      at = out.writeInt32BE(plan.batchLength, at);
      at = out.writeInt32BE(0, at); // partitionLeaderEpoch
      at = out.writeInt8(MAGIC_BYTE, at);
      const crcAt = at;
      at += 4;
      const bodyStart = at;
      at = out.writeInt16BE(0, at); // attributes: no compression, no transaction
      at = out.writeInt32BE(plan.records.length - 1, at); // lastOffsetDelta
      at = out.writeBigInt64BE(BigInt(plan.firstTimestamp), at);
      at = out.writeBigInt64BE(BigInt(plan.maxTimestamp), at);
      at = out.writeBigInt64BE(-1n, at); // producerId
      at = out.writeInt16BE(producerEpoch, at);
      at = out.writeInt32BE(plan.firstSequence, at);
      at = out.writeInt32BE(plan.records.length, at);
      plan.records.forEach((record, offsetDelta) => {
        at = writeVarInt(out, at, zigZag(record.bodyLength));
        at = out.writeInt8(0, at); // record attributes
        at = writeVarInt(out, at, zigZag(record.timestampDelta));
        at = writeVarInt(out, at, zigZag(offsetDelta));
        at = writeBytes(out, at, record.key, record.keyLength);
        at = writeBytes(out, at, record.value, record.valueLength);
        at = writeVarInt(out, at, 0); // no headers
      });
      out.writeUInt32BE(crc32c(out, bodyStart, at), crcAt);
    }
  }
  if (at !== size) throw new Error(`produce request encoded to ${at} bytes, planned ${size}`);
  return out;
}

function planPartition({
  partition,
  firstSequence = 0,
  messages,
}: ProduceRequestOptions['topicData'][number]['partitions'][number]): PartitionPlan {
  // As kafkajs: timestamps sorted as text (Array.prototype.sort), now when a message has none.
  const dateNow = Date.now();
  const stamped = messages.map((m) => m.timestamp).filter((t) => t != null) as number[];
  const timestamps = stamped.length === 0 ? [dateNow] : stamped.sort();
  const firstTimestamp = timestamps[0]!;
  const maxTimestamp = timestamps[timestamps.length - 1]!;
  let batchLength = RECORD_BATCH_OVERHEAD - 8 - 4; // without firstOffset and length
  const records = messages.map((message, offsetDelta): RecordPlan => {
    const timestampDelta = ((message.timestamp as number) || dateNow) - firstTimestamp;
    if (Math.abs(timestampDelta) > MAX_SAFE_DELTA) throw new Error('message timestamp out of range');
    const keyLength = byteLength(message.key);
    const valueLength = byteLength(message.value);
    const bodyLength =
      1 +
      varIntSize(zigZag(timestampDelta)) +
      varIntSize(zigZag(offsetDelta)) +
      bytesSize(keyLength) +
      bytesSize(valueLength) +
      1;
    batchLength += varIntSize(zigZag(bodyLength)) + bodyLength;
    return { key: message.key, keyLength, value: message.value, valueLength, timestampDelta, bodyLength };
  });
  return { partition, firstSequence, firstTimestamp, maxTimestamp, records, batchLength };
}

/** -1 for null, as Kafka writes a null key or value. */
function byteLength(value: Buffer | string | null | undefined): number {
  if (value == null) return -1;
  return typeof value === 'string' ? Buffer.byteLength(value) : value.length;
}

function bytesSize(length: number): number {
  return length < 0 ? 1 : varIntSize(zigZag(length)) + length;
}

function writeBytes(
  out: Buffer,
  at: number,
  value: Buffer | string | null | undefined,
  length: number,
): number {
  if (length < 0) return writeVarInt(out, at, 1); // zigzag(-1)
  let next = writeVarInt(out, at, zigZag(length));
  if (typeof value === 'string') next += out.write(value, next, length, 'utf8');
  else if (value) next += value.copy(out, next);
  return next;
}

/** ZigZag for the small integers of a record (|n| < 2^51): exact in doubles. */
function zigZag(n: number): number {
  return n >= 0 ? n * 2 : -n * 2 - 1;
}

function varIntSize(unsigned: number): number {
  let size = 1;
  while (unsigned >= 128) {
    unsigned = Math.floor(unsigned / 128);
    size++;
  }
  return size;
}

function writeVarInt(out: Buffer, at: number, unsigned: number): number {
  while (unsigned >= 128) {
    out[at++] = (unsigned % 128) | 128;
    unsigned = Math.floor(unsigned / 128);
  }
  out[at++] = unsigned;
  return at;
}

/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), as a record batch's checksum, eight bytes
 * a step ("slicing by 8"): table t holds the CRC of a byte followed by t zero bytes, so one step
 * folds eight bytes with eight lookups. A batch's records are checksummed on every produce call.
 */
const CRC32C_TABLES = (() => {
  const tables = new Int32Array(256 * 8);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    tables[n] = c;
  }
  for (let t = 1; t < 8; t++) {
    for (let n = 0; n < 256; n++) {
      const previous = tables[(t - 1) * 256 + n]!;
      tables[t * 256 + n] = tables[previous & 0xff]! ^ (previous >>> 8);
    }
  }
  return tables;
})();

export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const t = CRC32C_TABLES;
  let crc = -1;
  let i = start;
  for (const lastStep = end - 8; i <= lastStep; i += 8) {
    const low = crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    crc =
      t[1792 + (low & 0xff)]! ^
      t[1536 + ((low >>> 8) & 0xff)]! ^
      t[1280 + ((low >>> 16) & 0xff)]! ^
      t[1024 + (low >>> 24)]! ^
      t[768 + bytes[i + 4]!]! ^
      t[512 + bytes[i + 5]!]! ^
      t[256 + bytes[i + 6]!]! ^
      t[bytes[i + 7]!]!;
  }
  for (; i < end; i++) crc = t[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}
