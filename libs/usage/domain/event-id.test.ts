import { describe, expect, it } from 'vitest';
import { newEventId } from './event-id.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const NOW = Date.UTC(2026, 11, 1, 7, 30);

/** The 48-bit time an id carries, in ms. */
function timeOf(id: string): number {
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

describe('newEventId', () => {
  it('makes version 7 UUIDs, all different, across refills', () => {
    const ids = Array.from({ length: 2000 }, () => newEventId(NOW));
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("carries the time it is given in its first 48 bits (RFC 9562's example)", () => {
    // RFC 9562, appendix A.6: 2022-02-22T14:22:22-05:00
    expect(newEventId(0x017f22e279b0).slice(0, 13)).toBe('017f22e2-79b0');
    expect(newEventId(0).slice(0, 13)).toBe('00000000-0000');
    expect(newEventId(2 ** 48 - 1).slice(0, 13)).toBe('ffffffff-ffff');
    expect(timeOf(newEventId(NOW))).toBe(NOW);
  });

  it('stamps each id with its own time, also when the time goes back and forth within a refill', () => {
    const times = [NOW, NOW + 1, NOW, NOW + 2 ** 24, NOW + 2 ** 24 + 1, NOW + 1];
    expect(times.map((time) => timeOf(newEventId(time)))).toEqual(times);
  });

  it('sorts ids of later times after ids of earlier times, as text (the byte order Postgres sorts a uuid by)', () => {
    const ids: string[] = [];
    // 3 refills' worth, a new millisecond every 7 ids and a new 24-bit half every 100
    for (let i = 0; i < 800; i++)
      ids.push(newEventId(NOW + Math.floor(i / 7) + Math.floor(i / 100) * 2 ** 24));
    for (let i = 1; i < ids.length; i++) {
      if (timeOf(ids[i]!) > timeOf(ids[i - 1]!)) expect(ids[i]! > ids[i - 1]!).toBe(true);
    }
    expect(timeOf(ids.at(-1)!)).toBeGreaterThan(timeOf(ids[0]!));
  });

  it('uses every random digit: each hex digit shows up in every free position', () => {
    const seen = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 4000; i++) {
      const id = newEventId(NOW);
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
    // the first 13 characters are the one time given
    for (let c = 0; c < 13; c++) fixed.set(c, 1);
    expect(seen.map((digits) => digits.size)).toEqual(seen.map((_, position) => fixed.get(position) ?? 16));
  });

  it('refuses a time that is not whole ms within 48 bits', () => {
    for (const time of [-1, 2 ** 48, 1.5, Number.NaN]) {
      expect(() => newEventId(time)).toThrow(RangeError);
    }
  });
});
