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

  it('agrees with a list of every event read, for events read in any order between prunes', () => {
    // a seeded generator: the same sequence every run
    let seed = 42;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    const recent = new RecentUsage();
    // the reference: every event kept as read, in the second it counts in
    let held: { second: number; units: bigint }[] = [];
    let prunedThrough = Number.NEGATIVE_INFINITY;
    for (let round = 0; round < 60; round++) {
      // events up to 8 s out of order around a clock moving 1 s a round
      const events = Array.from({ length: 1 + next(6) }, () => ({
        recordedAtMs: (round + 10 - next(9)) * 1000 + next(1000),
        units: BigInt(1 + next(500)),
      }));
      recent.add(events.map((e) => event(7, (Number(e.units) / 100).toFixed(2), e.recordedAtMs)));
      for (const e of events) {
        // an event of a forgotten second counts in the first second after them
        const second = Math.max(Math.floor(e.recordedAtMs / 1000), prunedThrough + 1);
        held.push({ second, units: e.units * 1_000_000n });
      }
      if (round % 7 === 6) {
        const first = round + 4 - next(3);
        recent.prune(first * 1000);
        const forgotten = held.filter((h) => h.second < first);
        if (forgotten.length) prunedThrough = Math.max(prunedThrough, ...forgotten.map((h) => h.second));
        held = held.filter((h) => h.second >= first);
      }
      if (prunedThrough > Number.NEGATIVE_INFINITY)
        expect(recent.since(1, 7, prunedThrough * 1000 + 999)).toBeUndefined();
      for (let from = Math.max(0, prunedThrough + 1); from <= round + 11; from++) {
        const expected = held.filter((h) => h.second >= from).reduce((sum, h) => sum + h.units, 0n);
        expect(recent.since(1, 7, from * 1000), `round ${round}, from ${from}`).toBe(expected);
      }
    }
  });
});
