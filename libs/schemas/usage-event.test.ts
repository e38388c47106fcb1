import { describe, expect, it } from 'vitest';
import { CreateUsageEvent } from './usage-event.js';

const paths = (body: Record<string, unknown>) => {
  const parsed = CreateUsageEvent.safeParse({ subscription_item_id: 1, quantity: 1, ...body });
  return parsed.success ? [] : parsed.error.issues.map((issue) => issue.path.join('.'));
};

describe('CreateUsageEvent', () => {
  it('takes a quantity with exactly 8 fractional digits, refuses a ninth', () => {
    expect(paths({ quantity: 0.12345678 })).toEqual([]);
    expect(paths({ quantity: 0.123456789 })).toEqual(['quantity']);
  });

  it('counts an idempotency key in code points: 255 emoji pass, an empty key does not', () => {
    expect(paths({ idempotency_key: '😀'.repeat(255) })).toEqual([]);
    expect(paths({ idempotency_key: '😀'.repeat(256) })).toEqual(['idempotency_key']);
    expect(paths({ idempotency_key: '' })).toEqual(['idempotency_key']);
  });

  it('refuses a subscription item id of zero', () => {
    expect(paths({ subscription_item_id: 0 })).toEqual(['subscription_item_id']);
  });
});
