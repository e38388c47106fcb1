import { describe, expect, it } from 'vitest';
import type { UsageEventRecord } from '../usage/index.js';
import { RecentUsage } from './recent-usage.js';

const event = (itemId: number, quantity: string, recordedAtMs: number, orgId = 1): UsageEventRecord => ({
  id: '00000000-0000-4000-8000-000000000000',
  orgId,
  subscriptionItemId: itemId,
  idempotencyKey: 'k',
  quantity,
  occurredAtMs: recordedAtMs,
  recordedAtMs,
});

describe('RecentUsage, the bound of what an item received since a reading', () => {
  it('sums the positive quantities of an item from a second on, per organization', () => {
    const recent = new RecentUsage();
    recent.add([
      event(7, '1.5', 10_000),
      event(7, '1.5', 12_500),
      event(7, '-4', 12_600),
      event(8, '9', 12_000),
    ]);
    recent.add([event(7, '0.00000001', 13_000), event(7, '2', 13_000, 2)]);
    expect(recent.since(1, 7, 10_999)).toBe(300_000_001n);
    expect(recent.since(1, 7, 12_999)).toBe(150_000_001n);
    expect(recent.since(1, 7, 14_000)).toBe(0n);
    expect(recent.since(2, 7, 0)).toBe(200_000_000n);
    expect(recent.since(1, 9, 0)).toBe(0n);
  });

  it('cannot draw a bound from a forgotten second, and never under-counts what it read after', () => {
    const recent = new RecentUsage();
    recent.add([event(7, '1', 10_000), event(7, '1', 20_000)]);
    recent.prune(15_000);
    expect(recent.since(1, 7, 10_000)).toBeUndefined();
    expect(recent.since(1, 7, 15_000)).toBe(100_000_000n);
    // read after the prune, recorded before it: counted where a bound would look for it
    recent.add([event(7, '1', 11_000), event(8, '1', 11_000)]);
    recent.prune(15_500); // the same second: nothing more forgotten
    expect(recent.since(1, 7, 11_000)).toBe(200_000_000n);
    expect(recent.since(1, 7, 15_000)).toBe(100_000_000n);
    expect(recent.since(1, 8, 10_000)).toBe(100_000_000n);
    recent.prune(16_000);
    expect(recent.since(1, 8, 10_000)).toBeUndefined();
    expect(recent.since(1, 7, 16_000)).toBe(100_000_000n);
  });

  it('forgets only the seconds before the prune, and the newest of them, whatever the order read', () => {
    const recent = new RecentUsage();
    // read out of order: the second 12 first, then the second 10
    recent.add([event(7, '1', 12_000), event(7, '1', 10_000), event(8, '1', 15_000)]);
    recent.prune(15_000);
    // the second 12 was forgotten: a bound from the second 11 or 12 cannot be drawn
    expect(recent.since(1, 7, 11_000)).toBeUndefined();
    expect(recent.since(1, 7, 12_999)).toBeUndefined();
    expect(recent.since(1, 7, 13_000)).toBe(0n);
    // the second the prune starts at is kept
    expect(recent.since(1, 8, 15_000)).toBe(100_000_000n);
  });

  it('an event read after a prune, recorded in a forgotten second, counts in the first second kept', () => {
    const recent = new RecentUsage();
    recent.add([event(7, '1', 10_000)]);
    recent.prune(12_000);
    recent.add([event(7, '2', 5_000)]);
    // the second 10 is forgotten: a bound from the second 11 on must still hold the late 2
    expect(recent.since(1, 7, 11_000)).toBe(200_000_000n);
    expect(recent.since(1, 7, 12_000)).toBe(0n);
  });
});
