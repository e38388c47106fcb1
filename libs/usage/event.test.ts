import { describe, expect, it } from 'vitest';
import {
  decodeDedupRecord,
  decodeLogMessage,
  encodeDedupRecord,
  encodeLogMessage,
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
  it('round-trips through a log message keyed by organization and item', () => {
    const message = encodeLogMessage(record);
    expect(message.key).toBe('3:41');
    expect(decodeLogMessage(Buffer.from(message.value))).toEqual(record);
  });

  it('refuses a message that is not a version-1 usage event', () => {
    expect(() => decodeLogMessage('{"v":2}')).toThrow();
    expect(() =>
      decodeLogMessage(JSON.stringify({ ...JSON.parse(encodeLogMessage(record).value), quantity: 1 })),
    ).toThrow();
    expect(() => decodeLogMessage('not json')).toThrow();
    expect(() => decodeLogMessage(null)).toThrow();
  });

  it('keeps the event in the dedup record, its identity in the key', () => {
    const pending = encodeDedupRecord('pending', record);
    const committed = encodeDedupRecord('committed', record);
    expect(pending).not.toBe(committed);
    expect(decodeDedupRecord(pending, record)).toEqual({ state: 'pending', record });
    expect(decodeDedupRecord(committed, record)).toEqual({ state: 'committed', record });
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
