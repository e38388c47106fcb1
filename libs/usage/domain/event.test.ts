import { describe, expect, it } from 'vitest';
import {
  decodeDedupRecord,
  decodeLogMessage,
  dedupRecordIn,
  encodeDedupRecord,
  encodeLogMessages,
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
  it('routes each event by organization and item, one message per partition, events in order', () => {
    const second = {
      ...record,
      id: '6c1f5b4d-5a1f-4d2b-8e8f-1d9b3c2e4f5a',
      idempotencyKey: 'k2',
      quantity: '7',
    };
    const otherItem = { ...record, id: '7d2a6c5e-6b2a-4e3c-9f9a-2eac4d3f5a6b', subscriptionItemId: 42 };
    const partitionOf = (key: string) => (key === '3:41' ? 1 : 0);
    const messages = encodeLogMessages([record, otherItem, second], partitionOf);
    expect(messages.map((m) => [m.partition, m.key])).toEqual([
      [1, undefined],
      [0, undefined],
    ]);
    expect(decodeLogMessage(Buffer.from(messages[0]!.value))).toEqual([record, second]);
    expect(decodeLogMessage(messages[1]!.value)).toEqual([otherItem]);
    // Partition count not known yet: keyed by organization and item, which lands on the same partitions.
    const keyed = encodeLogMessages([record, otherItem, second]);
    expect(keyed.map((m) => m.key)).toEqual(['3:41', '3:42']);
    expect(decodeLogMessage(keyed[0]!.value)).toEqual([record, second]);
  });

  it('writes each event as one tab-separated line, numbers in decimal, keys in UTF-8', () => {
    const times = [
      0,
      7,
      10,
      999_999_999,
      1_000_000_000,
      1_000_000_007,
      Date.UTC(2099, 11, 31, 23, 59, 59, 999),
    ];
    const keys = ['k', 'clé-été', '数量-🚀', 'x'.repeat(255)];
    const events = times.flatMap((occurredAtMs, i) =>
      keys.map((idempotencyKey, j) => ({
        ...record,
        subscriptionItemId: 2 ** 31 + i,
        orgId: j * 1_000_000_001,
        idempotencyKey,
        occurredAtMs,
        recordedAtMs: 10 ** 15 - 1 - i,
      })),
    );
    const [message] = encodeLogMessages(events, () => 5);
    const lines = events.map(
      (e) =>
        `${e.id}\t${e.orgId}\t${e.subscriptionItemId}\t${e.quantity}\t${e.occurredAtMs}\t${e.recordedAtMs}\t${e.idempotencyKey}`,
    );
    expect(message!.value.toString()).toBe(['usage/1', ...lines].join('\n'));
    expect(decodeLogMessage(message!.value)).toEqual(events);
  });

  it('refuses a message that is not a usage message', () => {
    const text = encodeLogMessages([record])[0]!.value.toString();
    expect(() => decodeLogMessage(text.replace('usage/1', 'usage/9'))).toThrow();
    expect(() => decodeLogMessage(text.replace('0.12345678', '1e3'))).toThrow();
    expect(() => decodeLogMessage(text.replace('\t3\t', '\tx\t'))).toThrow();
    expect(() => decodeLogMessage(`${text}\nnot an event`)).toThrow();
    expect(() => decodeLogMessage(null)).toThrow();
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
  });
});
