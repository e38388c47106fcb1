import { describe, expect, it } from 'vitest';
import {
  addDays,
  addDaysToInstant,
  addMonthsAnchored,
  invoicePeriodDates,
  periodEndAfter,
} from './periods.js';

const at = (iso: string) => new Date(iso);
const iso = (d: Date) => d.toISOString();

/** The first `count` period boundaries from `start`, each computed from the previous one. */
function boundaries(
  start: string,
  period: 'monthly' | 'quarterly' | 'annually',
  anchorDay: number,
  count: number,
) {
  const out: string[] = [];
  let current = at(start);
  for (let i = 0; i < count; i++) {
    current = periodEndAfter(current, period, anchorDay);
    out.push(iso(current).slice(0, 10));
  }
  return out;
}

describe('billing periods', () => {
  it('a monthly subscription started Jan 31 renews Feb 28, Mar 31, Apr 30 (no drift)', () => {
    expect(boundaries('2026-01-31T00:00:00Z', 'monthly', 31, 4)).toEqual([
      '2026-02-28',
      '2026-03-31',
      '2026-04-30',
      '2026-05-31',
    ]);
  });

  it('uses Feb 29 in a leap year', () => {
    expect(boundaries('2028-01-31T00:00:00Z', 'monthly', 31, 2)).toEqual(['2028-02-29', '2028-03-31']);
    expect(boundaries('2028-01-30T00:00:00Z', 'monthly', 30, 2)).toEqual(['2028-02-29', '2028-03-30']);
  });

  it('anchors on the 29th and 30th too', () => {
    expect(boundaries('2026-01-29T00:00:00Z', 'monthly', 29, 2)).toEqual(['2026-02-28', '2026-03-29']);
    expect(boundaries('2026-01-30T00:00:00Z', 'monthly', 30, 2)).toEqual(['2026-02-28', '2026-03-30']);
  });

  it('crosses the year end', () => {
    expect(boundaries('2026-12-31T00:00:00Z', 'monthly', 31, 2)).toEqual(['2027-01-31', '2027-02-28']);
    expect(boundaries('2026-11-15T00:00:00Z', 'quarterly', 15, 2)).toEqual(['2027-02-15', '2027-05-15']);
  });

  it('quarterly from Nov 30 and annually from Feb 29', () => {
    expect(boundaries('2026-11-30T00:00:00Z', 'quarterly', 30, 3)).toEqual([
      '2027-02-28',
      '2027-05-30',
      '2027-08-30',
    ]);
    expect(boundaries('2024-02-29T00:00:00Z', 'annually', 29, 4)).toEqual([
      '2025-02-28',
      '2026-02-28',
      '2027-02-28',
      '2028-02-29',
    ]);
  });

  it('keeps the time of day of the start, in UTC', () => {
    expect(iso(periodEndAfter(at('2026-01-31T15:30:12.345Z'), 'monthly', 31))).toBe(
      '2026-02-28T15:30:12.345Z',
    );
  });

  it('adds whole terms of months on the anchor day', () => {
    expect(iso(addMonthsAnchored(at('2026-01-31T00:00:00Z'), 12, 31))).toBe('2027-01-31T00:00:00.000Z');
    expect(iso(addMonthsAnchored(at('2026-02-28T00:00:00Z'), 1, 31))).toBe('2026-03-31T00:00:00.000Z');
  });

  it('prints the first and last day of a period; consecutive periods meet without overlap', () => {
    expect(invoicePeriodDates(at('2026-01-01T00:00:00Z'), at('2026-02-01T00:00:00Z'))).toEqual({
      period_start: '2026-01-01',
      period_end: '2026-01-31',
    });
    expect(invoicePeriodDates(at('2026-01-31T00:00:00Z'), at('2026-02-28T00:00:00Z'))).toEqual({
      period_start: '2026-01-31',
      period_end: '2026-02-27',
    });
    expect(invoicePeriodDates(at('2028-02-29T00:00:00Z'), at('2028-03-31T00:00:00Z')).period_end).toBe(
      '2028-03-30',
    );
  });

  it('a period ended within a day (an immediate cancel) prints that day as its last', () => {
    expect(invoicePeriodDates(at('2026-03-01T00:00:00Z'), at('2026-03-16T12:00:00Z'))).toEqual({
      period_start: '2026-03-01',
      period_end: '2026-03-16',
    });
    expect(invoicePeriodDates(at('2026-03-01T00:00:00Z'), at('2026-03-16T00:00:01Z')).period_end).toBe(
      '2026-03-16',
    );
    expect(invoicePeriodDates(at('2026-03-01T00:00:00Z'), at('2026-03-16T00:00:00Z')).period_end).toBe(
      '2026-03-15',
    );
  });

  it('adds days across month and leap-year ends', () => {
    expect(addDays('2026-01-31', 30)).toBe('2026-03-02');
    expect(addDays('2028-02-28', 1)).toBe('2028-02-29');
    expect(addDays('2026-03-01', -1)).toBe('2026-02-28');
  });

  it('adds whole days of 86,400 s to an instant (a trial end), to the millisecond', () => {
    const start = new Date('2026-02-20T10:15:30.250Z');
    expect(addDaysToInstant(start, 14).toISOString()).toBe('2026-03-06T10:15:30.250Z');
    expect(addDaysToInstant(start, 1).getTime() - start.getTime()).toBe(86_400_000);
    expect(addDaysToInstant(start, 0)).toEqual(start);
  });
});
