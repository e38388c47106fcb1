import { describe, expect, it } from 'vitest';
import { newEventId } from './event-id.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newEventId', () => {
  it('makes version 4 UUIDs, all different, across refills', () => {
    const ids = Array.from({ length: 2000 }, () => newEventId());
    for (const id of ids) expect(id).toMatch(UUID_V4);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('uses every random digit: each hex digit shows up in every free position', () => {
    const seen = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 4000; i++) {
      const id = newEventId();
      for (let c = 0; c < 36; c++) seen[c]!.add(id[c]!);
    }
    const fixed = new Map([
      [8, 1],
      [13, 1],
      [18, 1],
      [23, 1],
      [14, 1], // the version
      [19, 4], // the variant: 8, 9, a or b
    ]);
    expect(seen.map((digits) => digits.size)).toEqual(seen.map((_, position) => fixed.get(position) ?? 16));
  });
});
