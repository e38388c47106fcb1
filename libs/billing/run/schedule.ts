import type { BillingPeriod, SubscriptionStatus } from '../../schemas/index.js';
import { addMonthsAnchored, assertSubscriptionTransition, periodEndAfter } from '../domain/index.js';

/**
 * What a billing run does to one subscription as of `now`, decided without touching storage:
 * which periods to invoice and which status moves happen, in order. The run then writes the
 * result. Billing is in arrears: a period is invoiced once it has ended (licensed items for the
 * period, metered usage of the period), so `next_billing_date` is the end of the current period.
 * A subscription several periods behind is caught up, one invoice per period.
 */

export interface SubscriptionSchedule {
  id: number;
  status: SubscriptionStatus;
  start_date: Date;
  trial_end_date: Date | null;
  billing_period: BillingPeriod;
  billing_anchor_day: number;
  current_period_start: Date;
  current_period_end: Date;
  next_billing_date: Date;
  term_type: 'evergreen' | 'termed';
  initial_term_months: number | null;
  auto_renew: boolean;
  subscription_end_date: Date | null;
  cancel_at_period_end: boolean;
  ended_at: Date | null;
}

export type ScheduleStep =
  | { kind: 'invoice'; periodStart: Date; periodEnd: Date; firstPeriod: boolean }
  | {
      kind: 'status';
      from: SubscriptionStatus;
      to: SubscriptionStatus;
      at: Date;
      reason: 'started' | 'trial_ended' | 'canceled_at_period_end' | 'term_ended';
    }
  | { kind: 'renewed'; at: Date; termEnd: Date };

/** Statuses a billing run looks at; paused, canceled and expired subscriptions are not billed. */
export const BILLABLE_STATUSES = ['pending', 'trialing', 'active', 'past_due', 'unpaid'] as const;

/** A guard against a corrupt row looping forever: 100 years of monthly periods. */
const MAX_STEPS = 1200;

export function planBilling(
  subscription: SubscriptionSchedule,
  now: Date,
): { steps: ScheduleStep[]; next: SubscriptionSchedule } {
  const next = { ...subscription };
  const steps: ScheduleStep[] = [];
  const move = (
    to: SubscriptionStatus,
    at: Date,
    reason: Extract<ScheduleStep, { kind: 'status' }>['reason'],
  ) => {
    assertSubscriptionTransition(next.id, next.status, to);
    steps.push({ kind: 'status', from: next.status, to, at, reason });
    next.status = to;
  };
  const firstPaidStart = (subscription.trial_end_date ?? subscription.start_date).getTime();

  while (
    (BILLABLE_STATUSES as readonly string[]).includes(next.status) &&
    next.next_billing_date.getTime() <= now.getTime()
  ) {
    if (steps.length > MAX_STEPS)
      throw new Error(`subscription ${next.id}: too many periods to bill at once`);
    switch (next.status) {
      case 'pending': {
        // the start date has come; the current period was set up at creation
        const trial = next.trial_end_date !== null && next.trial_end_date > next.start_date;
        move(trial ? 'trialing' : 'active', next.start_date, 'started');
        next.next_billing_date = next.current_period_end;
        break;
      }
      case 'trialing': {
        // a trial is never charged: it ends without an invoice
        const trialEnd = next.current_period_end;
        if (next.cancel_at_period_end) {
          move('canceled', trialEnd, 'canceled_at_period_end');
          next.ended_at = trialEnd;
          break;
        }
        move('active', trialEnd, 'trial_ended');
        next.current_period_start = trialEnd;
        next.current_period_end = periodEndAfter(trialEnd, next.billing_period, next.billing_anchor_day);
        next.next_billing_date = next.current_period_end;
        break;
      }
      default: {
        const periodStart = next.current_period_start;
        const periodEnd = next.current_period_end;
        steps.push({
          kind: 'invoice',
          periodStart,
          periodEnd,
          firstPeriod: periodStart.getTime() === firstPaidStart,
        });
        if (next.cancel_at_period_end) {
          move('canceled', periodEnd, 'canceled_at_period_end');
          next.ended_at = periodEnd;
          break;
        }
        const termEnd = next.term_type === 'termed' ? next.subscription_end_date : null;
        if (termEnd && periodEnd.getTime() >= termEnd.getTime()) {
          if (next.auto_renew && next.initial_term_months) {
            next.subscription_end_date = addMonthsAnchored(
              termEnd,
              next.initial_term_months,
              next.billing_anchor_day,
            );
            steps.push({ kind: 'renewed', at: periodEnd, termEnd: next.subscription_end_date });
          } else {
            // docs/architecture.md ("State machines") lets only trialing and active subscriptions expire; one that is behind on
            // payments when its term runs out is canceled instead (billing stops either way).
            move(next.status === 'active' ? 'expired' : 'canceled', periodEnd, 'term_ended');
            next.ended_at = periodEnd;
            break;
          }
        }
        next.current_period_start = periodEnd;
        next.current_period_end = periodEndAfter(periodEnd, next.billing_period, next.billing_anchor_day);
        next.next_billing_date = next.current_period_end;
      }
    }
  }
  return { steps, next };
}
