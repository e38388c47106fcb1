import { describe, expect, it } from 'vitest';
import { addMonthsAnchored, PERIOD_MONTHS } from '../../libs/billing/index.js';
import type { BillingPeriod } from '../../libs/schemas/index.js';
import { periodAt } from '../../libs/usage/index.js';

/*
 * The usage counters' calendar (libs/usage/domain/periods.ts) against billing's: every instant
 * falls in the period whose boundaries billing computes, boundaries included (an event at exactly
 * a period's end belongs to the next one), forwards and backwards from the running period.
 */

function billingPeriods(start: Date, period: BillingPeriod, anchorDay: number, count: number): number[] {
  const out = [start.getTime()];
  for (let k = 1; k <= count; k++)
    out.push(addMonthsAnchored(start, k * PERIOD_MONTHS[period], anchorDay).getTime());
  return out;
}

describe('periodAt', () => {
  for (const [label, first, period, anchor] of [
    ['monthly on the 31st', '2024-01-31T00:00:00Z', 'monthly', 31],
    ['monthly on the 15th at 13:30', '2025-03-15T13:30:00Z', 'monthly', 15],
    ['quarterly on the 30th', '2024-11-30T00:00:00Z', 'quarterly', 30],
    ['annually on Feb 29', '2024-02-29T00:00:00Z', 'annually', 29],
    // a subscription started "now": its boundaries keep the start's milliseconds
    ['monthly on the 31st at 09:15:42.250', '2024-01-31T09:15:42.250Z', 'monthly', 31],
  ] as const) {
    it(`${label}: each boundary starts its period, the instant before ends the previous`, () => {
      const bounds = billingPeriods(new Date(first), period, anchor, 30);
      // the running period is the 10th: earlier and later ones are derived from it
      const schedule = {
        startDateMs: bounds[0]!,
        billingPeriod: period,
        anchorDay: anchor,
        currentPeriodStartMs: bounds[10]!,
        currentPeriodEndMs: bounds[11]!,
      };
      for (let i = 0; i < 30; i++) {
        const expected = { startMs: bounds[i]!, endMs: bounds[i + 1]! };
        expect(periodAt(schedule, bounds[i]!), `${i} start`).toEqual(expected);
        expect(periodAt(schedule, bounds[i + 1]! - 1), `${i} last ms`).toEqual(expected);
        expect(periodAt(schedule, (bounds[i]! + bounds[i + 1]!) / 2), `${i} middle`).toEqual(expected);
      }
    });
  }

  it('a trial first: the trial is one period, paid periods follow its end on the anchor day', () => {
    const start = Date.parse('2026-01-10T00:00:00Z');
    const trialEnd = Date.parse('2026-01-24T00:00:00Z');
    const schedule = {
      startDateMs: start,
      billingPeriod: 'monthly' as const,
      anchorDay: 24,
      currentPeriodStartMs: start,
      currentPeriodEndMs: trialEnd,
    };
    expect(periodAt(schedule, trialEnd - 1)).toEqual({ startMs: start, endMs: trialEnd });
    expect(periodAt(schedule, trialEnd)).toEqual({
      startMs: trialEnd,
      endMs: Date.parse('2026-02-24T00:00:00Z'),
    });
    expect(periodAt(schedule, Date.parse('2026-03-24T00:00:00Z'))).toEqual({
      startMs: Date.parse('2026-03-24T00:00:00Z'),
      endMs: Date.parse('2026-04-24T00:00:00Z'),
    });
  });

  it('once the run moved it on, the first period still begins at the start, not on the anchor day', () => {
    // a mid-month start anchored on the 24th, two periods later: a late event of the first period
    // counts in [start, first end), the read-back's previous period (docs/decisions.md, "Where the
    // entitlement counter lives and why")
    const start = Date.parse('2026-01-10T00:00:00Z');
    const firstEnd = Date.parse('2026-01-24T00:00:00Z');
    const schedule = {
      startDateMs: start,
      billingPeriod: 'monthly' as const,
      anchorDay: 24,
      currentPeriodStartMs: Date.parse('2026-02-24T00:00:00Z'),
      currentPeriodEndMs: Date.parse('2026-03-24T00:00:00Z'),
    };
    const first = { startMs: start, endMs: firstEnd };
    expect(periodAt(schedule, start)).toEqual(first);
    expect(periodAt(schedule, Date.parse('2026-01-15T00:00:00Z'))).toEqual(first);
    expect(periodAt(schedule, firstEnd - 1)).toEqual(first);
    expect(periodAt(schedule, firstEnd)).toEqual({
      startMs: firstEnd,
      endMs: Date.parse('2026-02-24T00:00:00Z'),
    });
    // an instant before the start is not clamped: its period still holds it
    for (const atMs of [start - 1, Date.parse('2026-01-01T00:00:00Z')]) {
      const period = periodAt(schedule, atMs);
      expect(period.startMs, new Date(atMs).toISOString()).toBeLessThanOrEqual(atMs);
      expect(period.endMs, new Date(atMs).toISOString()).toBeGreaterThan(atMs);
    }
  });
});
