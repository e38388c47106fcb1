import { describe, expect, it } from 'vitest';
import {
  decodeDedupRecord,
  decodeLogEntries,
  decodeLogMessage,
  dedupRecordIn,
  encodeDedupRecord,
  encodeLogMessages,
  encodeVoidMessages,
  LOG_VERSION,
  MAX_LOG_MESSAGE_BYTES,
  toPublicUsageEvent,
  type UsageEventRecord,
} from './event.js';

const record: UsageEventRecord = {
  id: '5b0e4a3c-4f0e-4c1a-9d7e-0c8a2b1d3e4f',
  orgId: 3,
  subscriptionItemId: 41,
  idempotencyKey: 'key|with|bars',
  quantity: '0.12345678',
  occurredAtMs: Date.UTC(2026, 10, 1, 8, 0, 0, 250),
  recordedAtMs: Date.UTC(2026, 10, 1, 8, 0, 1, 5),
};

describe('usage event encodings', () => {
  it('puts a whole window in one unkeyed message, events in order, behind the version byte', () => {
    const second = {
      ...record,
      id: '6c1f5b4d-5a1f-4d2b-8e8f-1d9b3c2e4f5a',
      idempotencyKey: 'k2',
      quantity: '7',
    };
    const otherItem = { ...record, id: '7d2a6c5e-6b2a-4e3c-9f9a-2eac4d3f5a6b', subscriptionItemId: 42 };
    const messages = encodeLogMessages([record, otherItem, second]);
    expect(messages).toHaveLength(1);
    expect(Object.keys(messages[0]!)).toEqual(['value']);
    expect(messages[0]!.value[0]).toBe(LOG_VERSION);
    expect(decodeLogMessage(messages[0]!.value)).toEqual([record, otherItem, second]);
    expect(decodeLogEntries(Buffer.from(messages[0]!.value))).toEqual({
      events: [record, otherItem, second],
      voids: [],
    });
    expect(encodeLogMessages([])).toEqual([]);
  });

  it('carries every field exactly: large ids, the years ingest takes, keys of any length in UTF-8', () => {
    const times = [0, 7, 127, 128, 999_999_999, Date.UTC(2099, 11, 31, 23, 59, 59, 999), 2 ** 48 - 1];
    const keys = ['k', 'clé-été', '数量-🚀', 'x'.repeat(42), 'x'.repeat(43), 'é'.repeat(64), 'x'.repeat(255)];
    const ids = [0, 1, 127, 128, 16_383, 16_384, 2 ** 31, 2 ** 32 + 5, 999_999_999_999_999];
    const events = times.flatMap((occurredAtMs, i) =>
      keys.map((idempotencyKey, j) => ({
        ...record,
        subscriptionItemId: ids[(i + j) % ids.length]!,
        orgId: ids[(i * 3 + j) % ids.length]!,
        idempotencyKey,
        quantity: ['0', '1', '0.00000001', '12345678901234567890123456789.12345678'][j % 4]!,
        occurredAtMs,
        recordedAtMs: times[times.length - 1 - i]!,
      })),
    );
    const messages = encodeLogMessages(events);
    expect(messages).toHaveLength(1);
    expect(decodeLogMessage(messages[0]!.value)).toEqual(events);
  });

  it('cuts a window past the size limit into messages under it, each with its version byte', () => {
    const events = Array.from({ length: 6000 }, (_, i) => ({
      ...record,
      subscriptionItemId: i,
      idempotencyKey: `${i}-${'k'.repeat(200)}`,
    }));
    const messages = encodeLogMessages(events);
    expect(messages.length).toBeGreaterThan(1);
    for (const [i, { value }] of messages.entries()) {
      expect(value.length).toBeLessThanOrEqual(MAX_LOG_MESSAGE_BYTES);
      if (i < messages.length - 1) expect(value.length).toBeGreaterThan(MAX_LOG_MESSAGE_BYTES - 1000);
      expect(value[0]).toBe(LOG_VERSION);
    }
    expect(messages.flatMap((m) => decodeLogMessage(m.value))).toEqual(events);
  });

  it('refuses a compact message cut short anywhere, or with another version or a malformed field', () => {
    const [message] = encodeLogMessages([record, { ...record, idempotencyKey: 'é'.repeat(50) }]);
    const value = message!.value;
    const firstEnds = encodeLogMessages([record])[0]!.value.length;
    const decodable: number[] = [];
    for (let end = 1; end < value.length; end++) {
      let decoded: UsageEventRecord[];
      try {
        decoded = decodeLogMessage(value.subarray(0, end));
      } catch {
        continue;
      }
      // outside the try: a prefix read as a wrong event (a key cut short) must fail the test
      expect(decoded, `cut at ${end}`).toEqual(end === 1 ? [] : [record]);
      decodable.push(end);
    }
    // only where one event ends (or none began) does a prefix read as whole events
    expect(decodable).toEqual([1, firstEnds]);
    expect(() => decodeLogMessage(Buffer.concat([Buffer.from([3]), value.subarray(1)]))).toThrow();
    const badQuantity = Buffer.from(value);
    badQuantity.write('1e3', value.indexOf('0.12345678') + 0, 'latin1');
    expect(() => decodeLogMessage(badQuantity)).toThrow();
    const badId = Buffer.from(value);
    badId.write('z', 1, 'latin1');
    expect(() => decodeLogMessage(badId)).toThrow();
    expect(() => decodeLogMessage(null)).toThrow();
  });

  it('refuses a compact event whose ids pass 15 digits, whose quantity is finer than 8 digits, or without a key', () => {
    // The encoder writes what it is given; the decoder is the one check of what the sinks store
    // (docs/decisions.md, "Usage quantities keep at most 8 fractional digits").
    const decoded = (event: UsageEventRecord) => decodeLogMessage(encodeLogMessages([event])[0]!.value);
    const largest = 999_999_999_999_999;
    expect(decoded({ ...record, orgId: largest, subscriptionItemId: largest })).toEqual([
      { ...record, orgId: largest, subscriptionItemId: largest },
    ]);
    expect(() => decoded({ ...record, orgId: largest + 1 })).toThrow('malformed');
    expect(() => decoded({ ...record, subscriptionItemId: largest + 1 })).toThrow('malformed');
    expect(decoded({ ...record, quantity: '0.00000001' })[0]!.quantity).toBe('0.00000001');
    expect(() => decoded({ ...record, quantity: '0.000000001' })).toThrow('malformed');
    expect(() => decoded({ ...record, quantity: '1.' })).toThrow('malformed');
    expect(() => decoded({ ...record, idempotencyKey: '' })).toThrow('malformed');
  });

  it('still reads the text format (usage/1) of messages written before the compact one', () => {
    const line = (e: UsageEventRecord) =>
      `${e.id}\t${e.orgId}\t${e.subscriptionItemId}\t${e.quantity}\t${e.occurredAtMs}\t${e.recordedAtMs}\t${e.idempotencyKey}`;
    const other = { ...record, idempotencyKey: 'clé' };
    const text = ['usage/1', line(record), line(other)].join('\n');
    expect(decodeLogMessage(Buffer.from(text))).toEqual([record, other]);
    expect(() => decodeLogMessage(text.replace('usage/1', 'usage/9'))).toThrow();
    expect(() => decodeLogMessage(text.replace('0.12345678', '1e3'))).toThrow();
    expect(() => decodeLogMessage(text.replace('\t3\t', '\tx\t'))).toThrow();
    expect(() => decodeLogMessage(`${text}\nnot an event`)).toThrow();
    expect(() => decodeLogMessage(text.replace(record.id, 'not-a-uuid'))).toThrow();
    expect(() => decodeLogMessage(text.replace('0.12345678', '0.123456789'))).toThrow();
    expect(() => decodeLogMessage(text.replace('\tkey|with|bars', '\t'))).toThrow();
    // ids of at most 15 digits, as the compact format holds them (MAX_ID)
    const largest = { ...record, orgId: 999_999_999_999_999, subscriptionItemId: 999_999_999_999_999 };
    expect(decodeLogMessage(`usage/1\n${line(largest)}`)).toEqual([largest]);
    for (const wide of [{ orgId: 1e15 }, { subscriptionItemId: 1e15 }]) {
      expect(() => decodeLogMessage(`usage/1\n${line({ ...record, ...wide })}`)).toThrow('malformed');
      const voided = encodeVoidMessages([{ event: { ...record, ...wide }, voidedAtMs: 1 }])[0]!.value;
      expect(() => decodeLogEntries(voided)).toThrow('malformed');
    }
  });

  it('fills a message up to exactly the size limit before it cuts', () => {
    // bytes an event takes, and the most the encoder allows for it before writing it
    const size = (event: UsageEventRecord) => encodeLogMessages([event])[0]!.value.length - 1;
    const bound = (event: UsageEventRecord) =>
      36 + 8 + 8 + 1 + event.quantity.length + 12 + 8 + 3 * event.idempotencyKey.length;
    const filler = { ...record, idempotencyKey: 'f' };
    // fillers, then a last event whose bound lands exactly on the limit (its key by thirds,
    // the rest by digits of its quantity)
    let fillers = 0;
    let room = MAX_LOG_MESSAGE_BYTES - 1 - bound({ ...record, idempotencyKey: '' });
    while (room > 600) {
      fillers++;
      room -= size(filler);
    }
    const last = {
      ...record,
      idempotencyKey: 'l'.repeat(Math.floor(room / 3)),
      quantity: `${'1'.repeat(room % 3)}${record.quantity}`,
    };
    const events = [...Array.from({ length: fillers }, () => filler), last];
    expect(1 + fillers * size(filler) + bound(last)).toBe(MAX_LOG_MESSAGE_BYTES);
    expect(encodeLogMessages(events)).toHaveLength(1);
    // a byte more (a longer quantity) and the last event opens a message of its own
    const longer = { ...last, quantity: `1${last.quantity}` };
    const over = encodeLogMessages([...events.slice(0, -1), longer]);
    expect(over).toHaveLength(2);
    expect(decodeLogMessage(over[1]!.value)).toEqual([longer]);
  });

  it("writes a key's length in as many bytes as its longest UTF-8 form needs, at every size", () => {
    // 5462 three-byte characters: 16,386 bytes, past what two varint bytes hold
    for (const idempotencyKey of ['€'.repeat(42), '€'.repeat(43), '€'.repeat(5461), '€'.repeat(5462)]) {
      const event = { ...record, idempotencyKey };
      expect(decodeLogMessage(encodeLogMessages([event])[0]!.value)).toEqual([event]);
    }
  });

  it('puts a void on the partition it is given, without a key, when given a partitioner', () => {
    const partitions: string[] = [];
    const [message] = encodeVoidMessages([{ event: record, voidedAtMs: 1234 }], (key) => {
      partitions.push(key);
      return 5;
    });
    expect(partitions).toEqual(['3:41']);
    expect(message).toEqual({ partition: 5, value: expect.any(Buffer) });
    expect(decodeLogEntries(message!.value).voids).toEqual([{ event: record, voidedAtMs: 1234 }]);
  });

  it("reads voids through the same decoder, on their item's key", () => {
    const [message] = encodeVoidMessages([{ event: record, voidedAtMs: 1234 }]);
    expect(message!.key).toBe('3:41');
    expect(decodeLogEntries(message!.value)).toEqual({
      events: [],
      voids: [{ event: record, voidedAtMs: 1234 }],
    });
    expect(() => decodeLogMessage(message!.value)).toThrow();
    // when it was voided is a whole number of ms, as every other time on the log
    for (const voided of ['', 'soon', '12.5', '-1']) {
      const text = message!.value.toString().replace('\t1234\t', `\t${voided}\t`);
      expect(() => decodeLogEntries(Buffer.from(text)), JSON.stringify(voided)).toThrow('malformed');
    }
  });

  it('keeps the event in the dedup record, its identity in the key', () => {
    const pending = encodeDedupRecord('pending', record);
    const adopted = encodeDedupRecord('adopted', record);
    expect(dedupRecordIn('adopted', pending)).toBe(adopted);
    expect(dedupRecordIn('committed', adopted)).toBe(encodeDedupRecord('committed', record));
    expect(decodeDedupRecord(pending, record)).toEqual({ state: 'pending', record });
    expect(decodeDedupRecord(adopted, record)).toEqual({ state: 'adopted', record });
    expect(decodeDedupRecord(`C${pending.slice(1)}`, record)).toEqual({ state: 'committed', record });
    expect(() => decodeDedupRecord(`X${pending.slice(1)}`, record)).toThrow('malformed');
    // a record cut short loses a field: never read as an event of 1970
    const fields = pending.split('|');
    for (let kept = 1; kept < fields.length; kept++) {
      const cut = [...fields.slice(0, kept), ...fields.slice(kept).map(() => '')].join('|');
      expect(() => decodeDedupRecord(cut, record), cut).toThrow('malformed');
    }
  });

  it('is shown as the public usage event', () => {
    expect(toPublicUsageEvent(record)).toEqual({
      id: record.id,
      object: 'usage_event',
      subscription_item_id: 41,
      quantity: 0.12345678,
      timestamp: '2026-11-01T08:00:00.250Z',
      idempotency_key: 'key|with|bars',
      recorded_at: '2026-11-01T08:00:01.005Z',
    });
    // every digit of a large quantity, as the JSON number it came in as
    expect(toPublicUsageEvent({ ...record, quantity: '123456789.12345678' }).quantity).toBe(
      123456789.12345678,
    );
  });
});
