import { describe, expect, it } from 'vitest';
import { dataListWriter, jsonWriter } from './json-text.js';
import { UsageEventBatchResult } from './usage-batch.js';

const event = (i: number, key: string) => ({
  id: `5b0e4a3c-4f0e-4c1a-9d7e-${String(i).padStart(12, '0')}`,
  object: 'usage_event' as const,
  subscription_item_id: 41,
  quantity: 0.5,
  timestamp: '2026-11-01T08:00:00.250Z',
  idempotency_key: key,
  recorded_at: '2026-11-01T08:00:01.005Z',
});

describe('dataListWriter', () => {
  const write = dataListWriter(UsageEventBatchResult);
  const reference = jsonWriter(UsageEventBatchResult);

  it('writes the bytes jsonWriter writes, for bodies that outgrow its first buffer', () => {
    const data = Array.from({ length: 1000 }, (_, i) =>
      i % 7 === 3
        ? {
            status: 422,
            error: {
              error_code: 'VALIDATION_ERROR',
              detail: 'The request is invalid.',
              request_id: '6c1f5b4d-5a1f-4d2b-8e8f-1d9b3c2e4f5a',
              details: [{ field: 'quantity', message: 'Must be "positive" \\ > 0', code: 'too_small' }],
            },
          }
        : { status: 201, data: event(i, i % 2 ? `ключ-é-🙂-${i}` : `key-${i}`) },
    );
    const bytes = write({ data });
    expect(bytes.length).toBeGreaterThan(16 * 1024);
    expect(bytes).toEqual(Buffer.from(reference({ data })));
    expect(JSON.parse(bytes.toString())).toEqual({ data });
  });

  it('writes an empty list and a single item as jsonWriter does', () => {
    expect(write({ data: [] }).toString()).toBe(reference({ data: [] }));
    const one = { data: [{ status: 201, data: event(1, 'k') }] };
    expect(write(one).toString()).toBe(reference(one));
  });
});
