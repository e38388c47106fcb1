import type { BillingPeriod } from '../../schemas/index.js';

/**
 * Which billing period an instant falls in, for the per-item period counters (domain/counter.ts):
 * usage knows no price, but it counts an item's usage per period so that an entitlement check
 * reads its own writes (docs/decisions.md, "Where the entitlement counter lives and why"). The
 * calendar is billing's (periods [start, end) on the subscription's anchor day, at the time of
 * day of its boundaries, clamped to shorter months); usage sits below billing, so the few lines
 * of it are here, and test/entitlements/periods.test.ts holds them equal to billing's.
 */

/** What the counter needs of an item's subscription (read with the item, cached with it). */
export interface ItemSchedule {
  startDateMs: number;
  billingPeriod: BillingPeriod;
  anchorDay: number;
  currentPeriodStartMs: number;
  currentPeriodEndMs: number;
}

const PERIOD_MONTHS: Readonly<Record<BillingPeriod, number>> = { monthly: 1, quarterly: 3, annually: 12 };
const AVERAGE_MONTH_MS = 30.436875 * 86_400_000;

function daysInMonth(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();
}

/** billing's addMonthsAnchored: `months` calendar months after `fromMs`, on `anchorDay` (clamped). */
function addMonthsAnchored(fromMs: number, months: number, anchorDay: number): number {
  const from = new Date(fromMs);
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
  return target.getTime();
}

/**
 * The period [startMs, endMs) holding `atMs`. The running period as stored; later ones follow
 * its end on the anchor day, earlier ones precede its start (never before the subscription's
 * start, as the read-back's previous period). A schedule cached before the billing run moved the
 * subscription on still gives the same periods: every boundary lies on the same calendar.
 */
export function periodAt(schedule: ItemSchedule, atMs: number): { startMs: number; endMs: number } {
  const { currentPeriodStartMs: start, currentPeriodEndMs: end, anchorDay } = schedule;
  if (atMs >= start && atMs < end) return { startMs: start, endMs: end };
  const months = PERIOD_MONTHS[schedule.billingPeriod];
  if (atMs >= end) {
    const boundary = (k: number) => (k === 0 ? end : addMonthsAnchored(end, k * months, anchorDay));
    let k = Math.max(0, Math.floor((atMs - end) / (months * AVERAGE_MONTH_MS)));
    while (k > 0 && boundary(k) > atMs) k--;
    while (boundary(k + 1) <= atMs) k++;
    return { startMs: boundary(k), endMs: boundary(k + 1) };
  }
  const boundary = (k: number) => (k === 0 ? start : addMonthsAnchored(start, k * months, anchorDay));
  let k = Math.min(-1, Math.floor((atMs - start) / (months * AVERAGE_MONTH_MS)));
  while (boundary(k) > atMs) k--;
  while (k + 1 <= -1 && boundary(k + 1) <= atMs) k++;
  const startMs = boundary(k);
  // the first period begins at the subscription's start (the read-back's previous period too)
  const clamped =
    startMs < schedule.startDateMs && atMs >= schedule.startDateMs ? schedule.startDateMs : startMs;
  return { startMs: clamped, endMs: boundary(k + 1) };
}
