import { describe, expect, it } from 'vitest';
import { EARLIEST_EVENT_MS, eventTimesWithin, LATEST_EVENT_MS } from './event-times.js';

describe('eventTimesWithin', () => {
  const at = (iso: string) => new Date(iso);

  it('keeps a window inside the event times as it is', () => {
    expect(eventTimesWithin(at('2026-10-01T00:00:00Z'), at('2026-11-01T00:00:00Z'))).toEqual({
      fromMs: Date.UTC(2026, 9, 1),
      toMs: Date.UTC(2026, 10, 1),
    });
  });

  it('narrows derived bounds no store can hold: the day after 9999-12-31, a date before 1970', () => {
    const tenThousand = new Date(Date.parse('9999-12-31T00:00:00Z') + 86_400_000);
    expect(tenThousand.getUTCFullYear()).toBe(10000);
    expect(eventTimesWithin(at('2099-12-31T00:00:00Z'), tenThousand)).toEqual({
      fromMs: Date.UTC(2099, 11, 31),
      toMs: LATEST_EVENT_MS,
    });
    expect(eventTimesWithin(at('0001-01-01T00:00:00Z'), at('1970-01-02T00:00:00Z'))).toEqual({
      fromMs: EARLIEST_EVENT_MS,
      toMs: Date.UTC(1970, 0, 2),
    });
  });

  it('is no window when no event can lie in it, or it is empty or invalid', () => {
    expect(eventTimesWithin(at('9999-12-31T00:00:00Z'), new Date(8.64e15))).toBeUndefined();
    expect(eventTimesWithin(at('0001-01-01T00:00:00Z'), at('1969-12-31T00:00:00Z'))).toBeUndefined();
    expect(eventTimesWithin(at('2026-10-01T00:00:00Z'), at('2026-10-01T00:00:00Z'))).toBeUndefined();
    expect(eventTimesWithin(new Date(Number.NaN), at('2026-10-01T00:00:00Z'))).toBeUndefined();
  });
});
