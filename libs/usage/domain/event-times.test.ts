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

  it('spans from 1970-01-01T00:00:00Z to 2100-01-01T00:00:00Z, both exact to the millisecond', () => {
    expect(EARLIEST_EVENT_MS).toBe(Date.parse('1970-01-01T00:00:00.000Z'));
    expect(LATEST_EVENT_MS).toBe(Date.parse('2100-01-01T00:00:00.000Z'));
    // the first and the last instant an event can have are each a window of their own
    expect(eventTimesWithin(new Date(-5), new Date(1))).toEqual({ fromMs: 0, toMs: 1 });
    const last = Date.parse('2099-12-31T23:59:59.999Z');
    expect(eventTimesWithin(new Date(last), new Date(last + 10))).toEqual({
      fromMs: last,
      toMs: Date.parse('2100-01-01T00:00:00.000Z'),
    });
  });

  it('is a window of a single millisecond', () => {
    const ms = Date.UTC(2026, 9, 1);
    expect(eventTimesWithin(new Date(ms), new Date(ms + 1))).toEqual({ fromMs: ms, toMs: ms + 1 });
  });
});
