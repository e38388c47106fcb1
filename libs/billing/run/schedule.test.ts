import { describe, expect, it } from 'vitest';
import { planBilling, type ScheduleStep, type SubscriptionSchedule } from './schedule.js';

const d = (iso: string) => new Date(iso);

function subscription(overrides: Partial<SubscriptionSchedule> = {}): SubscriptionSchedule {
  return {
    id: 1,
    status: 'active',
    start_date: d('2026-01-31T00:00:00Z'),
    trial_end_date: null,
    billing_period: 'monthly',
    billing_anchor_day: 31,
    current_period_start: d('2026-01-31T00:00:00Z'),
    current_period_end: d('2026-02-28T00:00:00Z'),
    next_billing_date: d('2026-02-28T00:00:00Z'),
    term_type: 'evergreen',
    initial_term_months: null,
    auto_renew: true,
    subscription_end_date: null,
    cancel_at_period_end: false,
    ended_at: null,
    ...overrides,
  };
}

const describeStep = (step: ScheduleStep) => {
  if (step.kind === 'invoice') {
    return `invoice ${step.periodStart.toISOString().slice(0, 10)}..${step.periodEnd.toISOString().slice(0, 10)}${step.firstPeriod ? ' first' : ''}`;
  }
  if (step.kind === 'renewed') return `renewed until ${step.termEnd.toISOString().slice(0, 10)}`;
  return `${step.from}->${step.to} (${step.reason})`;
};

describe('planning a billing run for one subscription', () => {
  it('does nothing before the next billing date', () => {
    const plan = planBilling(subscription(), d('2026-02-27T23:59:59Z'));
    expect(plan.steps).toEqual([]);
    expect(plan.next).toEqual(subscription());
  });

  it('invoices the ended period in arrears and schedules the next one on the anchor day', () => {
    const plan = planBilling(subscription(), d('2026-02-28T00:00:00Z'));
    expect(plan.steps.map(describeStep)).toEqual(['invoice 2026-01-31..2026-02-28 first']);
    expect(plan.next.current_period_start.toISOString()).toBe('2026-02-28T00:00:00.000Z');
    expect(plan.next.current_period_end.toISOString()).toBe('2026-03-31T00:00:00.000Z');
    expect(plan.next.next_billing_date.toISOString()).toBe('2026-03-31T00:00:00.000Z');
  });

  it('catches up every period that ended, one invoice each', () => {
    const plan = planBilling(subscription(), d('2026-05-01T00:00:00Z'));
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-31..2026-02-28 first',
      'invoice 2026-02-28..2026-03-31',
      'invoice 2026-03-31..2026-04-30',
    ]);
    expect(plan.next.next_billing_date.toISOString()).toBe('2026-05-31T00:00:00.000Z');
  });

  it('never charges a trial: trialing -> active at the trial end, first paid period from there', () => {
    const trialing = subscription({
      status: 'trialing',
      start_date: d('2026-01-01T00:00:00Z'),
      trial_end_date: d('2026-01-15T00:00:00Z'),
      billing_anchor_day: 15,
      current_period_start: d('2026-01-01T00:00:00Z'),
      current_period_end: d('2026-01-15T00:00:00Z'),
      next_billing_date: d('2026-01-15T00:00:00Z'),
    });
    expect(planBilling(trialing, d('2026-01-20T00:00:00Z')).steps.map(describeStep)).toEqual([
      'trialing->active (trial_ended)',
    ]);
    expect(planBilling(trialing, d('2026-02-15T00:00:00Z')).steps.map(describeStep)).toEqual([
      'trialing->active (trial_ended)',
      'invoice 2026-01-15..2026-02-15 first',
    ]);
  });

  it('a trial canceled at period end ends at the trial end without any invoice', () => {
    const plan = planBilling(
      subscription({
        status: 'trialing',
        trial_end_date: d('2026-02-14T00:00:00Z'),
        current_period_end: d('2026-02-14T00:00:00Z'),
        next_billing_date: d('2026-02-14T00:00:00Z'),
        cancel_at_period_end: true,
      }),
      d('2026-06-01T00:00:00Z'),
    );
    // at the trial end, not at its start
    expect(datedMoves(plan.steps)).toEqual(['trialing->canceled (canceled_at_period_end) at 2026-02-14']);
    expect(plan.next.ended_at?.toISOString()).toBe('2026-02-14T00:00:00.000Z');
  });

  it('starts a pending subscription on its start date', () => {
    const pending = subscription({ status: 'pending', next_billing_date: d('2026-01-31T00:00:00Z') });
    expect(planBilling(pending, d('2026-02-01T00:00:00Z')).steps.map(describeStep)).toEqual([
      'pending->active (started)',
    ]);
    const withTrial = subscription({
      status: 'pending',
      trial_end_date: d('2026-02-07T00:00:00Z'),
      current_period_end: d('2026-02-07T00:00:00Z'),
      next_billing_date: d('2026-01-31T00:00:00Z'),
    });
    expect(planBilling(withTrial, d('2026-02-01T00:00:00Z')).steps.map(describeStep)).toEqual([
      'pending->trialing (started)',
    ]);
  });

  it('a pending subscription whose trial ends on its start date starts active, not trialing', () => {
    const noTrial = subscription({
      status: 'pending',
      trial_end_date: d('2026-01-31T00:00:00Z'),
      next_billing_date: d('2026-01-31T00:00:00Z'),
    });
    expect(planBilling(noTrial, d('2026-02-01T00:00:00Z')).steps.map(describeStep)).toEqual([
      'pending->active (started)',
    ]);
  });

  it('an unpaid subscription is still invoiced for each period that ends', () => {
    const plan = planBilling(subscription({ status: 'unpaid' }), d('2026-03-31T00:00:00Z'));
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-31..2026-02-28 first',
      'invoice 2026-02-28..2026-03-31',
    ]);
    expect(plan.next.status).toBe('unpaid');
  });

  it('cancel at period end: the last period is invoiced, then the subscription is canceled', () => {
    const plan = planBilling(subscription({ cancel_at_period_end: true }), d('2026-04-01T00:00:00Z'));
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-31..2026-02-28 first',
      'active->canceled (canceled_at_period_end)',
    ]);
    expect(plan.next.status).toBe('canceled');
    expect(plan.next.ended_at?.toISOString()).toBe('2026-02-28T00:00:00.000Z');
  });

  const termed = (autoRenew: boolean, status: 'active' | 'past_due' = 'active') =>
    subscription({
      status,
      start_date: d('2026-01-01T00:00:00Z'),
      billing_anchor_day: 1,
      current_period_start: d('2026-01-01T00:00:00Z'),
      current_period_end: d('2026-04-01T00:00:00Z'),
      next_billing_date: d('2026-04-01T00:00:00Z'),
      billing_period: 'quarterly',
      term_type: 'termed',
      initial_term_months: 6,
      auto_renew: autoRenew,
      subscription_end_date: d('2026-07-01T00:00:00Z'),
    });

  it('a termed subscription without auto-renew expires after its last period', () => {
    const plan = planBilling(termed(false), d('2027-01-01T00:00:00Z'));
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-01..2026-04-01 first',
      'invoice 2026-04-01..2026-07-01',
      'active->expired (term_ended)',
    ]);
    expect(plan.next.ended_at?.toISOString()).toBe('2026-07-01T00:00:00.000Z');
  });

  it('a termed subscription with auto-renew renews for another term and keeps billing', () => {
    const plan = planBilling(termed(true), d('2027-01-01T00:00:00Z'));
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-01..2026-04-01 first',
      'invoice 2026-04-01..2026-07-01',
      'renewed until 2027-01-01',
      'invoice 2026-07-01..2026-10-01',
      'invoice 2026-10-01..2027-01-01',
      'renewed until 2027-07-01',
    ]);
    expect(plan.next.status).toBe('active');
    expect(plan.next.subscription_end_date?.toISOString()).toBe('2027-07-01T00:00:00.000Z');
  });

  it('a term renews from its own end, not from the end of the period that passed it', () => {
    // quarterly periods, a 4-month term ending May 1: the period ending Jul 1 passes it, and the
    // next term runs May 1 -> Sep 1 (not Jul 1 -> Nov 1)
    const plan = planBilling(
      { ...termed(true), initial_term_months: 4, subscription_end_date: d('2026-05-01T00:00:00Z') },
      d('2026-07-01T00:00:00Z'),
    );
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-01..2026-04-01 first',
      'invoice 2026-04-01..2026-07-01',
      'renewed until 2026-09-01',
    ]);
  });

  it('a term that ends inside a period expires at the end of that invoiced period, not at the term end', () => {
    // quarterly periods, a 4-month term ending May 1: the period Apr 1 -> Jul 1 is invoiced in
    // full, so the subscription ends on Jul 1 (billing stops after what it billed)
    const plan = planBilling(
      { ...termed(false), initial_term_months: 4, subscription_end_date: d('2026-05-01T00:00:00Z') },
      d('2026-10-01T00:00:00Z'),
    );
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-01..2026-04-01 first',
      'invoice 2026-04-01..2026-07-01',
      'active->expired (term_ended)',
    ]);
    expect(plan.next.ended_at?.toISOString()).toBe('2026-07-01T00:00:00.000Z');
  });

  it('a termed subscription with auto-renew but no term length has nothing to renew: it expires', () => {
    const plan = planBilling({ ...termed(true), initial_term_months: null }, d('2026-10-01T00:00:00Z'));
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-01..2026-04-01 first',
      'invoice 2026-04-01..2026-07-01',
      'active->expired (term_ended)',
    ]);
  });

  it('a renewed term keeps the anchor day through short months', () => {
    // docs/decisions.md, "Periods keep the anchor day": a term of one month from Jan 31 ends Feb 28,
    // renews until Mar 31 (not Mar 28), then Apr 30, then May 31
    const monthly = subscription({
      term_type: 'termed',
      initial_term_months: 1,
      subscription_end_date: d('2026-02-28T00:00:00Z'),
    });
    const plan = planBilling(monthly, d('2026-05-01T00:00:00Z'));
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-31..2026-02-28 first',
      'renewed until 2026-03-31',
      'invoice 2026-02-28..2026-03-31',
      'renewed until 2026-04-30',
      'invoice 2026-03-31..2026-04-30',
      'renewed until 2026-05-31',
    ]);
    expect(plan.next.subscription_end_date?.toISOString()).toBe('2026-05-31T00:00:00.000Z');
  });

  it('a past-due termed subscription cannot expire (docs/architecture.md, "Rules of the contract"), so its term end cancels it', () => {
    const plan = planBilling(termed(false, 'past_due'), d('2026-07-01T00:00:00Z'));
    expect(plan.steps.map(describeStep).at(-1)).toBe('past_due->canceled (term_ended)');
  });

  it('an unpaid termed subscription cannot expire either: its term end cancels it', () => {
    const plan = planBilling({ ...termed(false), status: 'unpaid' }, d('2026-10-01T00:00:00Z'));
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-01..2026-04-01 first',
      'invoice 2026-04-01..2026-07-01',
      'unpaid->canceled (term_ended)',
    ]);
    expect(plan.next.status).toBe('canceled');
    expect(plan.next.ended_at?.toISOString()).toBe('2026-07-01T00:00:00.000Z');
  });

  const datedMoves = (steps: ScheduleStep[]) =>
    steps.flatMap((step) =>
      step.kind === 'invoice' ? [] : [`${describeStep(step)} at ${step.at.toISOString().slice(0, 10)}`],
    );

  it('a pending subscription starts at its start date and its trial ends at the trial end', () => {
    const pending = subscription({
      status: 'pending',
      start_date: d('2026-01-10T00:00:00Z'),
      trial_end_date: d('2026-01-20T00:00:00Z'),
      billing_anchor_day: 20,
      current_period_start: d('2026-01-10T00:00:00Z'),
      current_period_end: d('2026-01-20T00:00:00Z'),
      next_billing_date: d('2026-01-10T00:00:00Z'),
    });
    expect(datedMoves(planBilling(pending, d('2026-01-25T00:00:00Z')).steps)).toEqual([
      'pending->trialing (started) at 2026-01-10',
      'trialing->active (trial_ended) at 2026-01-20',
    ]);
  });

  it('a cancel at period end is dated at the end of the invoiced period', () => {
    const plan = planBilling(subscription({ cancel_at_period_end: true }), d('2026-04-01T00:00:00Z'));
    expect(datedMoves(plan.steps)).toEqual(['active->canceled (canceled_at_period_end) at 2026-02-28']);
  });

  it('a term end and a renewal are dated at the end of the period that passed the term, not at the term end', () => {
    // quarterly periods, a 4-month term ending May 1: the period Apr 1 -> Jul 1 passes it
    const expires = planBilling(
      { ...termed(false), initial_term_months: 4, subscription_end_date: d('2026-05-01T00:00:00Z') },
      d('2026-10-01T00:00:00Z'),
    );
    expect(datedMoves(expires.steps)).toEqual(['active->expired (term_ended) at 2026-07-01']);
    const renews = planBilling(
      { ...termed(true), initial_term_months: 4, subscription_end_date: d('2026-05-01T00:00:00Z') },
      d('2026-07-01T00:00:00Z'),
    );
    expect(datedMoves(renews.steps)).toEqual(['renewed until 2026-09-01 at 2026-07-01']);
  });

  it('only a termed subscription has a term to end: an evergreen one bills on past any end date it holds', () => {
    const plan = planBilling(
      { ...termed(false), term_type: 'evergreen', initial_term_months: null },
      d('2026-10-01T00:00:00Z'),
    );
    expect(plan.steps.map(describeStep)).toEqual([
      'invoice 2026-01-01..2026-04-01 first',
      'invoice 2026-04-01..2026-07-01',
      'invoice 2026-07-01..2026-10-01',
    ]);
    expect(plan.next.status).toBe('active');
  });

  it('refuses to catch up more than 1200 periods at once (a corrupt row, not a loop)', () => {
    // 200 years of monthly periods behind: 2400 invoices
    expect(() => planBilling(subscription(), d('2226-03-01T00:00:00Z'))).toThrow(
      /subscription 1: too many periods to bill at once/,
    );
    // 90 years behind is still caught up
    expect(planBilling(subscription(), d('2116-01-01T00:00:00Z')).steps).toHaveLength(1079);
  });

  it('leaves canceled, expired and paused subscriptions alone', () => {
    for (const status of ['canceled', 'expired', 'paused'] as const) {
      expect(planBilling(subscription({ status }), d('2030-01-01T00:00:00Z')).steps).toEqual([]);
    }
  });
});
