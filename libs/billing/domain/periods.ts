import type { BillingPeriod } from '../../schemas/index.js';

/**
 * Calendar arithmetic of billing periods, in UTC. A period runs from one boundary instant to the
 * next, [start, end). Boundaries keep the time of day of the subscription's start and fall on its
 * anchor day, clamped to the length of shorter months: a subscription anchored on the 31st renews
 * on Jan 31, Feb 28 (29 in leap years), Mar 31, Apr 30... It never drifts to the 28th for good,
 * because each boundary is computed from the anchor day, not from the previous boundary's day.
 */

export const PERIOD_MONTHS: Readonly<Record<BillingPeriod, number>> = {
  monthly: 1,
  quarterly: 3,
  annually: 12,
};

export function daysInMonth(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();
}

/** The instant `months` calendar months after `from`, on `anchorDay` (clamped), same UTC time of day. */
export function addMonthsAnchored(from: Date, months: number, anchorDay: number): Date {
  const target = new Date(
    Date.UTC(
      from.getUTCFullYear(),
      from.getUTCMonth() + months,
      1,
      from.getUTCHours(),
      from.getUTCMinutes(),
      from.getUTCSeconds(),
      from.getUTCMilliseconds(),
    ),
  );
  target.setUTCDate(Math.min(anchorDay, daysInMonth(target.getUTCFullYear(), target.getUTCMonth())));
  return target;
}

/** The end of the period that starts at `periodStart`. */
export function periodEndAfter(periodStart: Date, period: BillingPeriod, anchorDay: number): Date {
  return addMonthsAnchored(periodStart, PERIOD_MONTHS[period], anchorDay);
}

/** YYYY-MM-DD of an instant, in UTC. */
export function utcDate(instant: Date): string {
  return instant.toISOString().slice(0, 10);
}

/** A YYYY-MM-DD date plus `days` (may be negative). */
export function addDays(date: string, days: number): string {
  const instant = new Date(`${date}T00:00:00.000Z`);
  instant.setUTCDate(instant.getUTCDate() + days);
  return utcDate(instant);
}

export function addDaysToInstant(instant: Date, days: number): Date {
  return new Date(instant.getTime() + days * 86_400_000);
}

/**
 * The dates printed on an invoice for the period [start, end): the first day and the last day
 * (inclusive), so consecutive invoices neither overlap nor leave a gap: Jan 1 - Jan 31, then
 * Feb 1 - Feb 28.
 */
export function invoicePeriodDates(start: Date, end: Date): { period_start: string; period_end: string } {
  // the last day with an instant before `end`: the day before a midnight end, the day of any other
  return { period_start: utcDate(start), period_end: utcDate(new Date(end.getTime() - 1)) };
}
