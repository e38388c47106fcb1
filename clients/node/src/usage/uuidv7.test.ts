import { describe, expect, it } from 'vitest';
import { uuidv7 } from './uuidv7.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('uuidv7', () => {
  it('is a version 7, variant 10 UUID whose first 48 bits are the Unix milliseconds', () => {
    const ms = Date.parse('2026-11-20T10:00:00.123Z');
    const id = uuidv7(ms);
    expect(id).toMatch(UUID_V7);
    expect(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(ms);
    expect(uuidv7(0).startsWith('00000000-0000-7')).toBe(true);
    expect(uuidv7(2 ** 48 - 1).startsWith('ffffffff-ffff-7')).toBe(true);
  });

  it('sorts in time order across milliseconds, and never repeats (through several draws of the random pool)', () => {
    const ids = Array.from({ length: 5000 }, (_, i) => uuidv7(1_700_000_000_000 + Math.floor(i / 10)));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(UUID_V7);
    const firstOfEachMs = ids.filter((_, i) => i % 10 === 0);
    expect([...firstOfEachMs].sort()).toEqual(firstOfEachMs);
  });

  it('uses every random position (no bit stuck)', () => {
    const ids = Array.from({ length: 200 }, () => uuidv7(0).replace(/-/g, ''));
    for (let position = 12; position < 32; position++) {
      if (position === 12) continue; // the version nibble
      expect(new Set(ids.map((id) => id[position])).size, `hex digit ${position}`).toBeGreaterThan(3);
    }
  });

  it('draws every random digit on its own (none a copy of another)', () => {
    const ids = Array.from({ length: 200 }, () => uuidv7(0).replace(/-/g, ''));
    // 12 bits after the version nibble, then 62 after the variant's two (digit 16 holds them)
    const random = [13, 14, 15, ...Array.from({ length: 15 }, (_, i) => 17 + i)];
    for (const p of random) {
      for (const q of random) {
        if (q <= p) continue;
        expect(
          ids.every((id) => id[p] === id[q]),
          `hex digits ${p} and ${q}`,
        ).toBe(false);
      }
    }
  });
});
